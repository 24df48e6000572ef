//! Folders and files: the sharing roles and what each may do, object names, the chunked upload
//! protocol (with a bounded decompressor for its chunks) and the headers of downloads.
//!
//! Pure rules: the service applies them (and `docs/content-rules.md` explains them to clients
//! and operators).
//!
//! # Roles
//!
//! The owner of an object may do everything, ownership transfer included. Members hold one of
//! the roles of [`ROLES`]: folder roles (kind `d`) on a folder and everything under it, file
//! roles (kind `f`) on one file. [`allows`] answers whether an [`Access`] permits an
//! [`Action`]; the table ("✓" allowed):
//!
//! | action | Owner | Manager (1) | Collaborator (2) | Downloader (3) | Viewer (4) | Uploader (5) | Collaborator, file (8) | Viewer, file (9) |
//! |---|---|---|---|---|---|---|---|---|
//! | list | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ |
//! | preview | ✓ | ✓ | ✓ | ✓ | ✓ | | ✓ | ✓ |
//! | download | ✓ | ✓ | ✓ | ✓ | | | ✓ | |
//! | upload | ✓ | ✓ | ✓ | | | ✓ | ✓ | |
//! | create folder | ✓ | ✓ | ✓ | | | | | |
//! | rename | ✓ | ✓ | ✓ | | | | ✓ | |
//! | delete | ✓ | ✓ | ✓ | | | | | |
//! | recover | ✓ | ✓ | ✓ | | | | | |
//! | move | ✓ | ✓ | ✓ | | | | | |
//! | copy | ✓ | ✓ | ✓ | ✓ | | | ✓ | |
//! | manage members | ✓ | ✓ | | | | | | |
//! | comment | ✓ | ✓ | ✓ | ✓ | | | ✓ | |
//! | read comments | ✓ | ✓ | ✓ | ✓ | ✓ | | ✓ | ✓ |
//!
//! An Uploader lists a folder but sees only the files it uploaded itself (the service filters
//! the list); it cannot open, preview or download what others put there.
//!
//! Inheritance: a folder membership applies to the folder and everything below it, down to a
//! folder that breaks inheritance. A nested membership may only raise a role (the service
//! refuses a lower one with `ERR_ENTITY_PARENT_FOLDER_MEMBER_EXISTS` and changes of inherited
//! members with `ERR_ENTITY_INHERITED_MEMBER_NOT_MODIFIABLE`), so the role of the nearest
//! membership is also the strongest one on the path. The service therefore combines every
//! grant that applies to an object (memberships on the object and on its ancestors up to the
//! inheritance break, a file share, a group membership) with [`strongest`], which makes the
//! answer independent of the order in which grants are found. The owner always wins.

use coffer_errors::{ApiError, ErrorCode};
use flate2::{Crc, Decompress, FlushDecompress, Status};
use std::fmt;
use std::str::FromStr;

// ---------------------------------------------------------------------------------------------
// Roles and permissions
// ---------------------------------------------------------------------------------------------

/// Folder or file: the `type` of an object and of a role, `d` or `f` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    Folder,
    File,
}

impl ObjectKind {
    /// The wire form: `d` for a folder, `f` for a file.
    pub const fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Folder => "d",
            ObjectKind::File => "f",
        }
    }

    /// The kind of a wire value (`d` or `f`, exactly).
    pub fn parse(s: &str) -> Option<ObjectKind> {
        match s {
            "d" => Some(ObjectKind::Folder),
            "f" => Some(ObjectKind::File),
            _ => None,
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sharing role as `GET /rest/roles` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoleDef {
    pub id: i64,
    pub name: &'static str,
    /// 1 is the strongest role (Manager), larger numbers are weaker. A file role has the rank of
    /// the folder role of the same name, so ranks compare across kinds.
    pub rank: i64,
    pub kind: ObjectKind,
}

/// The roles, in `id` order: folder roles Manager 1, Collaborator 2, Downloader 3, Viewer 4,
/// Uploader 5; file roles Collaborator 8, Viewer 9.
pub const ROLES: &[RoleDef] = &[
    RoleDef {
        id: 1,
        name: "Manager",
        rank: 1,
        kind: ObjectKind::Folder,
    },
    RoleDef {
        id: 2,
        name: "Collaborator",
        rank: 2,
        kind: ObjectKind::Folder,
    },
    RoleDef {
        id: 3,
        name: "Downloader",
        rank: 3,
        kind: ObjectKind::Folder,
    },
    RoleDef {
        id: 4,
        name: "Viewer",
        rank: 4,
        kind: ObjectKind::Folder,
    },
    RoleDef {
        id: 5,
        name: "Uploader",
        rank: 5,
        kind: ObjectKind::Folder,
    },
    RoleDef {
        id: 8,
        name: "Collaborator",
        rank: 2,
        kind: ObjectKind::File,
    },
    RoleDef {
        id: 9,
        name: "Viewer",
        rank: 4,
        kind: ObjectKind::File,
    },
];

/// The role with this id.
pub fn role(id: i64) -> Option<&'static RoleDef> {
    ROLES.iter().find(|r| r.id == id)
}

/// What a caller wants to do with a folder or file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// See the object, its metadata and (for a folder) its children.
    List,
    /// See a rendered preview (images, pages) in the browser without getting the bytes.
    Preview,
    /// Get the content: the current version, older versions.
    Download,
    /// Add new files and new versions of existing files.
    Upload,
    /// Create subfolders.
    CreateFolder,
    /// Change the name, description or expiry.
    Rename,
    /// Move to the trash.
    Delete,
    /// Take back from the trash.
    Recover,
    /// Move the object, or move something out of the folder.
    MoveOut,
    /// Copy the object elsewhere (the destination needs `Upload`).
    Copy,
    /// Add, change and remove members.
    ManageMembers,
    /// Add comments.
    Comment,
    /// Read comments.
    ReadComments,
}

impl Action {
    /// Every action, in table order.
    pub const ALL: [Action; 13] = [
        Action::List,
        Action::Preview,
        Action::Download,
        Action::Upload,
        Action::CreateFolder,
        Action::Rename,
        Action::Delete,
        Action::Recover,
        Action::MoveOut,
        Action::Copy,
        Action::ManageMembers,
        Action::Comment,
        Action::ReadComments,
    ];

    /// The action in plain words, as the role table names it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Action::List => "list",
            Action::Preview => "preview",
            Action::Download => "download",
            Action::Upload => "upload",
            Action::CreateFolder => "create folder",
            Action::Rename => "rename",
            Action::Delete => "delete",
            Action::Recover => "recover",
            Action::MoveOut => "move",
            Action::Copy => "copy",
            Action::ManageMembers => "manage members",
            Action::Comment => "comment",
            Action::ReadComments => "read comments",
        }
    }

    const fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// What a user holds on an object: ownership, or a role by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    Owner,
    Role(i64),
}

const fn mask(actions: &[Action]) -> u32 {
    let mut m = 0;
    let mut i = 0;
    while i < actions.len() {
        m |= actions[i].bit();
        i += 1;
    }
    m
}

use Action as A;

const MANAGER: u32 = mask(&Action::ALL);
const COLLABORATOR: u32 = MANAGER & !A::ManageMembers.bit();
const DOWNLOADER: u32 = mask(&[
    A::List,
    A::Preview,
    A::Download,
    A::Copy,
    A::Comment,
    A::ReadComments,
]);
const VIEWER: u32 = mask(&[A::List, A::Preview, A::ReadComments]);
const UPLOADER: u32 = mask(&[A::List, A::Upload]);
const FILE_COLLABORATOR: u32 = mask(&[
    A::List,
    A::Preview,
    A::Download,
    A::Upload,
    A::Rename,
    A::Copy,
    A::Comment,
    A::ReadComments,
]);
const FILE_VIEWER: u32 = VIEWER;

const fn role_mask(id: i64) -> u32 {
    match id {
        1 => MANAGER,
        2 => COLLABORATOR,
        3 => DOWNLOADER,
        4 => VIEWER,
        5 => UPLOADER,
        8 => FILE_COLLABORATOR,
        9 => FILE_VIEWER,
        _ => 0,
    }
}

/// Whether `access` permits `action` (the table of the module documentation). The owner may do
/// everything; an unknown role id nothing.
pub fn allows(access: Access, action: Action) -> bool {
    match access {
        Access::Owner => true,
        Access::Role(id) => role_mask(id) & action.bit() != 0,
    }
}

/// The stronger of two grants on the same object: the owner always; else the role of the
/// smaller rank; at equal rank the one that allows more (a folder Collaborator over a file
/// Collaborator), then `a`. A known role beats an unknown id. See the module documentation for
/// how the service combines inherited grants with it.
pub fn strongest(a: Access, b: Access) -> Access {
    match (a, b) {
        (Access::Owner, _) | (_, Access::Owner) => Access::Owner,
        (Access::Role(x), Access::Role(y)) => match (role(x), role(y)) {
            (_, None) => a,
            (None, Some(_)) => b,
            (Some(rx), Some(ry)) => {
                let wider = role_mask(y).count_ones() > role_mask(x).count_ones();
                if ry.rank < rx.rank || (ry.rank == rx.rank && wider) {
                    b
                } else {
                    a
                }
            }
        },
    }
}

/// The role table as Markdown (actions down, Owner then each role across), for the docs.
pub fn role_table_markdown() -> String {
    let mut columns: Vec<(String, Access)> = vec![("Owner".into(), Access::Owner)];
    for r in ROLES {
        let name = match r.kind {
            ObjectKind::Folder => format!("{} ({})", r.name, r.id),
            ObjectKind::File => format!("{}, file ({})", r.name, r.id),
        };
        columns.push((name, Access::Role(r.id)));
    }
    let mut s = String::from("| action |");
    for (name, _) in &columns {
        s.push_str(&format!(" {name} |"));
    }
    s.push_str("\n|---|");
    for _ in &columns {
        s.push_str("---|");
    }
    s.push('\n');
    for action in Action::ALL {
        s.push_str(&format!("| {} |", action.as_str()));
        for (_, access) in &columns {
            s.push_str(if allows(*access, action) {
                " ✓ |"
            } else {
                " |"
            });
        }
        s.push('\n');
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

/// The longest name, in UTF-8 bytes (what common file systems store).
pub const NAME_MAX_BYTES: usize = 255;

/// Checks the name of a folder or file, naming the field `name` in the error. See
/// [`validate_name_as`].
pub fn validate_name(name: &str) -> Result<(), ApiError> {
    validate_name_as(name, "name")
}

/// Checks the name of a folder or file, naming `field` in the error (`filename` for
/// `initiateUpload`). A blank name is 422 `ERR_INPUT_REQUIRED`; every other refusal is 422
/// `ERR_INPUT_INVALID_FORMAT`:
/// - longer than [`NAME_MAX_BYTES`] bytes of UTF-8;
/// - exactly `.` or `..`;
/// - a `/` or `\` (a name is never a path);
/// - a control character (NUL, line breaks, tabs, …: the rule of every text field);
/// - a bidirectional override or isolate (U+202A–U+202E, U+2066–U+2069), which can make
///   `invoice\u{202E}fdp.exe` read as `invoiceexe.pdf`, or a line or paragraph separator
///   (U+2028, U+2029);
/// - leading or trailing white space (two names that look alike must be one name);
/// - a trailing dot (Windows and SMB drop it, so `report.` would turn into `report` on a synced
///   disk and collide).
///
/// Names are not rewritten: what passes is stored as sent (its folded key is [`fold_name`]).
pub fn validate_name_as(name: &str, field: &str) -> Result<(), ApiError> {
    let invalid = |why: &str| {
        ApiError::field(ErrorCode::InputInvalidFormat, field)
            .with_message(format!("The value has an invalid format ({field}: {why})."))
    };
    if name.trim().is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, field));
    }
    if name.len() > NAME_MAX_BYTES {
        return Err(invalid("a name has at most 255 bytes"));
    }
    if name == "." || name == ".." {
        return Err(invalid("a name cannot be . or .."));
    }
    if name.contains(['/', '\\']) {
        return Err(invalid("a name cannot contain / or \\"));
    }
    if !crate::input::is_clean(name, false) {
        return Err(invalid("control characters are not allowed"));
    }
    if name.chars().any(|c| {
        matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
    }) {
        return Err(invalid(
            "direction overrides and line separators are not allowed",
        ));
    }
    if name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace) {
        return Err(invalid("a name cannot begin or end with a space"));
    }
    if name.ends_with('.') {
        return Err(invalid("a name cannot end with a dot"));
    }
    Ok(())
}

/// The key that makes names unique per folder regardless of case: Unicode NFC (so a name
/// typed on a system that sends decomposed accents, `e` + U+0301, meets the composed `é`), then
/// lower case (`str::to_lowercase`, Unicode's default case mapping, not full case folding:
/// `ß` and `ss` stay distinct), then NFC again.
///
/// An ASCII name is its own NFC and lower-cases byte by byte, so it takes the short way (a
/// listing folds every name it orders).
pub fn fold_name(name: &str) -> String {
    if name.is_ascii() {
        return name.to_ascii_lowercase();
    }
    let nfc = icu_normalizer::ComposingNormalizerBorrowed::new_nfc();
    let lower = nfc.normalize(name).to_lowercase();
    nfc.normalize(&lower).into_owned()
}

/// The `n`th alternative of a taken name, the number before the extension: `report.pdf`, 1 →
/// `report (1).pdf`; `folder`, 2 → `folder (2)`; `.bashrc`, 1 → `.bashrc (1)`. `n` 0 is the name
/// itself. The stem is shortened (at a character boundary) so the result stays within
/// [`NAME_MAX_BYTES`]. The service numbers from the name the client asked for, trying 1, 2, …
pub fn numbered_name(name: &str, n: u32) -> String {
    if n == 0 {
        return name.to_string();
    }
    let suffix = format!(" ({n})");
    let (stem, ext) = match extension(name) {
        Some(e) => (&name[..name.len() - e.len() - 1], e),
        None => (name, ""),
    };
    let dot_ext = if ext.is_empty() {
        String::new()
    } else {
        format!(".{ext}")
    };
    let budget = NAME_MAX_BYTES.saturating_sub(suffix.len() + dot_ext.len());
    let kept = truncate_bytes(stem, budget);
    if kept.is_empty() {
        // Not one character of the stem fits beside the extension: number the whole name.
        let whole = truncate_bytes(name, NAME_MAX_BYTES - suffix.len());
        return format!("{whole}{suffix}");
    }
    format!("{kept}{suffix}{dot_ext}")
}

fn truncate_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The extension: what follows the last dot, when that dot is not the first character and the
/// rest is not empty and has no white space. `a.tar.gz` → `gz`; `.bashrc`, `notes.`,
/// `v1.2 draft` → none. The case is kept.
pub fn extension(name: &str) -> Option<&str> {
    let dot = name.rfind('.')?;
    let ext = &name[dot + 1..];
    if dot == 0 || ext.is_empty() || ext.contains(char::is_whitespace) {
        return None;
    }
    Some(ext)
}

/// The MIME type of a name by its extension (any case), from a table of common types;
/// `application/octet-stream` for anything else.
pub fn guess_mime(name: &str) -> &'static str {
    let Some(ext) = extension(name) else {
        return OCTET_STREAM;
    };
    let ext = ext.to_ascii_lowercase();
    MIME_TYPES
        .iter()
        .find(|(e, _)| *e == ext)
        .map_or(OCTET_STREAM, |(_, m)| m)
}

const OCTET_STREAM: &str = "application/octet-stream";

const MIME_TYPES: &[(&str, &str)] = &[
    // Documents
    ("pdf", "application/pdf"),
    ("txt", "text/plain"),
    ("log", "text/plain"),
    ("md", "text/markdown"),
    ("csv", "text/csv"),
    ("tsv", "text/tab-separated-values"),
    ("rtf", "application/rtf"),
    ("html", "text/html"),
    ("htm", "text/html"),
    ("xhtml", "application/xhtml+xml"),
    ("css", "text/css"),
    ("js", "text/javascript"),
    ("mjs", "text/javascript"),
    ("json", "application/json"),
    ("xml", "application/xml"),
    ("yaml", "application/yaml"),
    ("yml", "application/yaml"),
    ("ics", "text/calendar"),
    ("vcf", "text/vcard"),
    ("eml", "message/rfc822"),
    ("msg", "application/vnd.ms-outlook"),
    ("doc", "application/msword"),
    (
        "docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    ("xls", "application/vnd.ms-excel"),
    (
        "xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
    ("ppt", "application/vnd.ms-powerpoint"),
    (
        "pptx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ),
    ("odt", "application/vnd.oasis.opendocument.text"),
    ("ods", "application/vnd.oasis.opendocument.spreadsheet"),
    ("odp", "application/vnd.oasis.opendocument.presentation"),
    // Images
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("bmp", "image/bmp"),
    ("avif", "image/avif"),
    ("heic", "image/heic"),
    ("tif", "image/tiff"),
    ("tiff", "image/tiff"),
    ("ico", "image/vnd.microsoft.icon"),
    ("svg", "image/svg+xml"),
    // Audio and video
    ("mp3", "audio/mpeg"),
    ("wav", "audio/wav"),
    ("ogg", "audio/ogg"),
    ("oga", "audio/ogg"),
    ("flac", "audio/flac"),
    ("m4a", "audio/mp4"),
    ("aac", "audio/aac"),
    ("mp4", "video/mp4"),
    ("m4v", "video/mp4"),
    ("mov", "video/quicktime"),
    ("webm", "video/webm"),
    ("ogv", "video/ogg"),
    ("avi", "video/x-msvideo"),
    ("mkv", "video/x-matroska"),
    // Archives
    ("zip", "application/zip"),
    ("gz", "application/gzip"),
    ("tgz", "application/gzip"),
    ("tar", "application/x-tar"),
    ("7z", "application/x-7z-compressed"),
    ("rar", "application/vnd.rar"),
    ("bz2", "application/x-bzip2"),
    ("xz", "application/x-xz"),
];

// ---------------------------------------------------------------------------------------------
// The chunked upload protocol
// ---------------------------------------------------------------------------------------------

/// The `compressionMode` of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// The bytes as they are.
    Normal,
    /// A gzip stream (RFC 1952), one member.
    Gzip,
    /// A zlib stream (RFC 1950).
    Zlib,
}

impl Compression {
    /// The wire form: `NORMAL`, `GZIP`, `ZLIB`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Compression::Normal => "NORMAL",
            Compression::Gzip => "GZIP",
            Compression::Zlib => "ZLIB",
        }
    }

    /// Reads `compressionMode`, in any case; anything else is 422 `ERR_INPUT_NOT_IN_LIST` on
    /// `compressionMode`.
    pub fn parse(s: &str) -> Result<Compression, ApiError> {
        [Compression::Normal, Compression::Gzip, Compression::Zlib]
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                ApiError::field(ErrorCode::InputNotInList, "compressionMode").with_message(
                    "The value is not in the allowed list (compressionMode: NORMAL, GZIP or ZLIB).",
                )
            })
    }
}

impl FromStr for Compression {
    type Err = ApiError;
    fn from_str(s: &str) -> Result<Self, ApiError> {
        Compression::parse(s)
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An upload session as stored, before the chunk at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UploadState {
    /// `totalChunks` from `initiateUpload`, when given.
    pub total_chunks: Option<u32>,
    /// `totalSize` from `initiateUpload`, when given.
    pub total_size: Option<u64>,
    /// Chunks accepted so far (the last accepted index).
    pub uploaded_chunks: u32,
    /// Bytes accepted so far, uncompressed.
    pub uploaded_size: u64,
    /// The uncompressed size of the last accepted chunk, to recognise its retry.
    pub last_chunk_size: Option<u64>,
}

/// What a chunk request declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkMeta {
    /// `index`, from 1; absent means the next one.
    pub index: Option<u32>,
    /// `lastChunk` = 1.
    pub last_chunk: bool,
    pub compression: Compression,
    /// `compressionSize`: the bytes on the wire.
    pub compression_size: u64,
    /// `originalSize`: the bytes once decompressed.
    pub original_size: u64,
}

/// What to do with a chunk that passed [`check_chunk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkDecision {
    /// Store it as chunk `index`; `completes` when it is the last one (answer 201 `File`).
    Accept { index: u32, completes: bool },
    /// A retry of the last accepted chunk: answer as the first time, store nothing.
    RepeatOfLast,
}

/// The most bytes a GZIP or ZLIB chunk of `original` bytes may take on the wire: deflate's
/// worst case (stored blocks) plus room for the stream's header and trailer.
pub const fn max_compressed_size(original: u64) -> u64 {
    original
        .saturating_add(original / 1000)
        .saturating_add(1024)
}

fn invalid(field: &str, why: &str) -> ApiError {
    ApiError::field(ErrorCode::InvalidParameter, field)
        .with_message(format!("The parameter is invalid ({field}: {why})."))
}

/// Checks a chunk's declaration against its session before any byte is read. Every refusal is
/// 422 `ERR_INVALID_PARAMETER` naming the field at fault:
/// - `index`: 0, not the next one (`uploadedChunks + 1`), or past `totalChunks`. The index of
///   the last accepted chunk again is its retry ([`ChunkDecision::RepeatOfLast`]) when its
///   `originalSize` is the one accepted;
/// - `originalSize`: above `max_chunk` (the `uploadChunkMax` setting), or more than `totalSize`
///   leaves room for;
/// - `compressionSize`: not `originalSize` for `NORMAL`; 0 or above
///   [`max_compressed_size`] for `GZIP`/`ZLIB`;
/// - `lastChunk`: set before the declared `totalChunks`;
/// - `totalSize`: the upload completes (`lastChunk`, or the index is `totalChunks`) with a size
///   other than the declared `totalSize`.
pub fn check_chunk(
    state: &UploadState,
    chunk: &ChunkMeta,
    max_chunk: u64,
) -> Result<ChunkDecision, ApiError> {
    let next = state.uploaded_chunks.checked_add(1);
    let index = match (chunk.index, next) {
        (Some(i), _) => i,
        (None, Some(n)) => n,
        (None, None) => return Err(invalid("index", "too many chunks")),
    };
    if index == 0 {
        return Err(invalid("index", "chunks are numbered from 1"));
    }
    if chunk.index.is_some() && index == state.uploaded_chunks {
        return match state.last_chunk_size {
            Some(size) if size != chunk.original_size => Err(invalid(
                "index",
                "the chunk repeats the last index with another size",
            )),
            _ => Ok(ChunkDecision::RepeatOfLast),
        };
    }
    if Some(index) != next {
        return Err(invalid(
            "index",
            &format!("expected chunk {}", u64::from(state.uploaded_chunks) + 1),
        ));
    }
    if let Some(total) = state.total_chunks {
        if index > total {
            return Err(invalid("index", &format!("the upload has {total} chunks")));
        }
    }
    if chunk.original_size > max_chunk {
        return Err(invalid(
            "originalSize",
            &format!("a chunk has at most {max_chunk} bytes"),
        ));
    }
    match chunk.compression {
        Compression::Normal if chunk.compression_size != chunk.original_size => {
            return Err(invalid(
                "compressionSize",
                "must equal originalSize for NORMAL",
            ));
        }
        Compression::Gzip | Compression::Zlib
            if chunk.compression_size == 0
                || chunk.compression_size > max_compressed_size(chunk.original_size) =>
        {
            return Err(invalid(
                "compressionSize",
                "not a possible size for the compressed chunk",
            ));
        }
        _ => {}
    }
    let size = state
        .uploaded_size
        .checked_add(chunk.original_size)
        .ok_or_else(|| invalid("originalSize", "too large"))?;
    if let Some(total) = state.total_size {
        if size > total {
            return Err(invalid(
                "originalSize",
                &format!("the upload has {total} bytes in all"),
            ));
        }
    }
    if chunk.last_chunk {
        if let Some(total) = state.total_chunks {
            if index < total {
                return Err(invalid(
                    "lastChunk",
                    &format!("the upload has {total} chunks"),
                ));
            }
        }
    }
    let completes = chunk.last_chunk || state.total_chunks == Some(index);
    if completes {
        if let Some(total) = state.total_size {
            if size != total {
                return Err(invalid(
                    "totalSize",
                    &format!("the chunks add up to {size} bytes, not {total}"),
                ));
            }
        }
    }
    Ok(ChunkDecision::Accept { index, completes })
}

/// Checks what actually arrived against the declaration: 422 `ERR_INVALID_PARAMETER` on
/// `compressionSize` when the bytes received differ from it, on `originalSize` when the
/// decompressed bytes do.
pub fn check_received(
    chunk: &ChunkMeta,
    received_compressed: u64,
    decompressed: u64,
) -> Result<(), ApiError> {
    if received_compressed != chunk.compression_size {
        return Err(invalid(
            "compressionSize",
            &format!(
                "{received_compressed} bytes arrived, {} were declared",
                chunk.compression_size
            ),
        ));
    }
    if decompressed != chunk.original_size {
        return Err(invalid(
            "originalSize",
            &format!(
                "the chunk holds {decompressed} bytes, {} were declared",
                chunk.original_size
            ),
        ));
    }
    Ok(())
}

const SCRATCH: usize = 32 * 1024;
/// The longest gzip header kept while waiting for its end (optional fields included).
const GZIP_HEADER_MAX: usize = 128 * 1024;

#[derive(Debug)]
enum Stage {
    GzipHeader(Vec<u8>),
    Inflate,
    GzipTrailer(Vec<u8>),
    Done,
}

/// Decompresses one chunk as its bytes stream in, never producing more than the declared
/// `originalSize` nor reading more than the declared `compressionSize`: a decompression bomb is
/// refused as soon as its output passes the declaration, having written at most that much plus
/// one scratch buffer (32 KiB) of work. Refusals are 422 `ERR_INVALID_PARAMETER` on
/// `originalSize` (too much output), `compressionSize` (too much input) or `content` (not a
/// valid stream: bad header, corrupt data, checksum mismatch, bytes after the stream's end, or
/// a stream cut short).
pub struct ChunkDecoder {
    mode: Compression,
    original_size: u64,
    compression_size: u64,
    consumed: u64,
    produced: u64,
    inflate: Option<Decompress>,
    crc: Crc,
    stage: Stage,
    scratch: Vec<u8>,
}

impl fmt::Debug for ChunkDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkDecoder")
            .field("mode", &self.mode)
            .field("original_size", &self.original_size)
            .field("compression_size", &self.compression_size)
            .field("consumed", &self.consumed)
            .field("produced", &self.produced)
            .field("stage", &self.stage)
            .finish()
    }
}

fn corrupt(why: &str) -> ApiError {
    invalid("content", why)
}

fn too_long() -> ApiError {
    invalid(
        "originalSize",
        "the chunk decompresses to more bytes than declared",
    )
}

impl ChunkDecoder {
    /// A decoder for one chunk of `compression` declaring `original_size` and
    /// `compression_size`.
    pub fn new(compression: Compression, original_size: u64, compression_size: u64) -> Self {
        let (inflate, stage, scratch) = match compression {
            Compression::Normal => (None, Stage::Inflate, Vec::new()),
            Compression::Gzip => (
                Some(Decompress::new(false)),
                Stage::GzipHeader(Vec::new()),
                vec![0; SCRATCH],
            ),
            Compression::Zlib => (
                Some(Decompress::new(true)),
                Stage::Inflate,
                vec![0; SCRATCH],
            ),
        };
        ChunkDecoder {
            mode: compression,
            original_size,
            compression_size,
            consumed: 0,
            produced: 0,
            inflate,
            crc: Crc::new(),
            stage,
            scratch,
        }
    }

    /// Takes the next bytes of the chunk as they arrived and appends what they decode to.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), ApiError> {
        if self.pass_through(input.len() as u64)? {
            out.extend_from_slice(input);
            return Ok(());
        }
        self.count_input(input.len() as u64)?;
        self.decode(input, out)
    }

    /// For an uncompressed chunk, takes the next `len` bytes as their own decoding, checked and
    /// counted as [`ChunkDecoder::feed`] would, so that the caller passes them on without a
    /// copy: `Ok(true)`. For a compressed chunk it takes nothing and answers `Ok(false)` (the
    /// bytes go to `feed`).
    pub fn pass_through(&mut self, len: u64) -> Result<bool, ApiError> {
        if self.mode != Compression::Normal {
            return Ok(false);
        }
        self.count_input(len)?;
        if self.produced + len > self.original_size {
            return Err(too_long());
        }
        self.produced += len;
        Ok(true)
    }

    /// Counts bytes that arrived against the declared `compressionSize`.
    fn count_input(&mut self, len: u64) -> Result<(), ApiError> {
        let total = self.consumed.saturating_add(len);
        if total > self.compression_size {
            return Err(invalid(
                "compressionSize",
                "the chunk has more bytes than declared",
            ));
        }
        self.consumed = total;
        Ok(())
    }

    /// Ends the chunk: the stream must be complete. Answers the number of decompressed bytes
    /// (for [`check_received`]).
    pub fn finish(mut self, out: &mut Vec<u8>) -> Result<u64, ApiError> {
        if self.mode == Compression::Normal {
            return Ok(self.produced);
        }
        if matches!(self.stage, Stage::Inflate) {
            self.inflate_step(&[], out, FlushDecompress::Finish)?;
        }
        match self.stage {
            Stage::Done => Ok(self.produced),
            _ => Err(corrupt("the compressed data ends early")),
        }
    }

    fn decode(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), ApiError> {
        loop {
            match &mut self.stage {
                Stage::GzipHeader(buf) => {
                    if input.is_empty() {
                        return Ok(());
                    }
                    buf.extend_from_slice(input);
                    match gzip_header_len(buf)? {
                        None if buf.len() > GZIP_HEADER_MAX => {
                            return Err(corrupt("the gzip header is too long"));
                        }
                        None => return Ok(()),
                        Some(len) => {
                            let rest = buf.split_off(len);
                            self.stage = Stage::Inflate;
                            return self.decode(&rest, out);
                        }
                    }
                }
                Stage::Inflate => {
                    let used = self.inflate_step(input, out, FlushDecompress::None)?;
                    input = &input[used..];
                    if matches!(self.stage, Stage::Inflate) {
                        // The decompressor takes every byte until its stream ends; bytes it
                        // will not take are never dropped silently.
                        return if input.is_empty() {
                            Ok(())
                        } else {
                            Err(corrupt("the compressed data is corrupt"))
                        };
                    }
                }
                Stage::GzipTrailer(t) => {
                    let take = (8 - t.len()).min(input.len());
                    t.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    if t.len() < 8 {
                        return Ok(());
                    }
                    let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
                    let size = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
                    if crc != self.crc.sum() || size != self.produced as u32 {
                        return Err(corrupt("the gzip checksum does not match"));
                    }
                    self.stage = Stage::Done;
                }
                Stage::Done => {
                    return if input.is_empty() {
                        Ok(())
                    } else {
                        Err(corrupt("bytes follow the end of the compressed stream"))
                    };
                }
            }
        }
    }

    /// Inflates from `input` until it is used up or the stream ends; answers the bytes used.
    /// Each call of the decompressor may write at most one byte more than the declaration still
    /// allows, so a bomb is caught at its first surplus byte.
    fn inflate_step(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        flush: FlushDecompress,
    ) -> Result<usize, ApiError> {
        let Some(d) = self.inflate.as_mut() else {
            return Ok(0);
        };
        let mut used = 0;
        loop {
            let left = self.original_size - self.produced;
            let space = usize::try_from(left.saturating_add(1))
                .unwrap_or(usize::MAX)
                .min(SCRATCH);
            let (in0, out0) = (d.total_in(), d.total_out());
            let status = d
                .decompress(&input[used..], &mut self.scratch[..space], flush)
                .map_err(|_| corrupt("the compressed data is corrupt"))?;
            let took = (d.total_in() - in0) as usize;
            let made = (d.total_out() - out0) as usize;
            used += took;
            if made as u64 > left {
                return Err(too_long());
            }
            if made > 0 {
                self.produced += made as u64;
                self.crc.update(&self.scratch[..made]);
                out.extend_from_slice(&self.scratch[..made]);
            }
            if status == Status::StreamEnd {
                self.stage = match self.mode {
                    Compression::Gzip => Stage::GzipTrailer(Vec::with_capacity(8)),
                    _ => Stage::Done,
                };
                return Ok(used);
            }
            let output_full = made == space;
            if (used == input.len() && !output_full) || (took == 0 && made == 0) {
                return Ok(used);
            }
        }
    }
}

/// The length of the gzip header at the start of `b` (RFC 1952 §2.3), `None` while incomplete.
fn gzip_header_len(b: &[u8]) -> Result<Option<usize>, ApiError> {
    let bad = || corrupt("not a gzip stream");
    for (i, want) in [0x1f, 0x8b, 8].into_iter().enumerate() {
        if b.get(i).is_some_and(|&v| v != want) {
            return Err(bad());
        }
    }
    if b.len() < 10 {
        return Ok(None);
    }
    let flags = b[3];
    if flags & 0xe0 != 0 {
        return Err(bad());
    }
    let mut i = 10;
    if flags & 0x04 != 0 {
        let Some(x) = b.get(i..i + 2) else {
            return Ok(None);
        };
        i += 2 + usize::from(u16::from_le_bytes([x[0], x[1]]));
        if b.len() < i {
            return Ok(None);
        }
    }
    for flag in [0x08, 0x10] {
        if flags & flag != 0 {
            let Some(nul) = b[i..].iter().position(|&c| c == 0) else {
                return Ok(None);
            };
            i += nul + 1;
        }
    }
    if flags & 0x02 != 0 {
        let Some(x) = b.get(i..i + 2) else {
            return Ok(None);
        };
        let mut crc = Crc::new();
        crc.update(&b[..i]);
        if crc.sum() as u16 != u16::from_le_bytes([x[0], x[1]]) {
            return Err(corrupt("the gzip header checksum does not match"));
        }
        i += 2;
    }
    Ok(Some(i))
}

// ---------------------------------------------------------------------------------------------
// Downloads
// ---------------------------------------------------------------------------------------------

/// How to answer a `Range` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeOutcome {
    /// 200 with the whole content.
    Full,
    /// 206 with bytes `start..=end` (`Content-Range: bytes start-end/size`).
    Partial { start: u64, end: u64 },
    /// 416 with `Content-Range: bytes */size`.
    Unsatisfiable,
}

/// Reads a `Range` header (RFC 9110 §14.2) for content of `size` bytes. One byte range is
/// served: `bytes=a-b` (`b` past the end is cut to the end), `bytes=a-`, `bytes=-n` (the last
/// `n`, all of it when `n` ≥ `size`); the unit is case-insensitive and spaces around the range
/// are allowed. Several ranges, another unit, or anything unparseable (`b` < `a` included)
/// answer the whole content, which the RFC allows. A range starting at or after the end, and
/// `bytes=-0`, are unsatisfiable. Empty content (`size` 0, §14.1.3): `bytes=-n` with `n` > 0 is
/// satisfiable but no 206 can express it, so the whole (empty) content is sent; every other
/// range is unsatisfiable.
pub fn parse_range(header: Option<&str>, size: u64) -> RangeOutcome {
    let Some(h) = header else {
        return RangeOutcome::Full;
    };
    let Some((unit, set)) = h.trim().split_once('=') else {
        return RangeOutcome::Full;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return RangeOutcome::Full;
    }
    let mut specs = set.split(',').map(str::trim).filter(|s| !s.is_empty());
    let (Some(spec), None) = (specs.next(), specs.next()) else {
        return RangeOutcome::Full;
    };
    let Some((first, last)) = spec.split_once('-') else {
        return RangeOutcome::Full;
    };
    let (first, last) = (first.trim(), last.trim());
    if first.is_empty() {
        let Some(n) = digits(last) else {
            return RangeOutcome::Full;
        };
        return match (n, size) {
            (0, _) => RangeOutcome::Unsatisfiable,
            (_, 0) => RangeOutcome::Full,
            _ => RangeOutcome::Partial {
                start: size.saturating_sub(n),
                end: size - 1,
            },
        };
    }
    let Some(start) = digits(first) else {
        return RangeOutcome::Full;
    };
    let end = if last.is_empty() {
        u64::MAX
    } else {
        match digits(last) {
            Some(e) if e >= start => e,
            _ => return RangeOutcome::Full,
        }
    };
    if start >= size {
        return RangeOutcome::Unsatisfiable;
    }
    RangeOutcome::Partial {
        start,
        end: end.min(size - 1),
    }
}

/// A run of ASCII digits as a number, saturating at `u64::MAX` (a position past any content).
fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.bytes().fold(0u64, |n, b| {
        n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    }))
}

/// Whether a `Range` may be honoured under `If-Range` (RFC 9110 §13.1.5): no `If-Range`, or one
/// that is this strong `etag`. A date or a weak tag answers the whole content.
pub fn if_range_allows_partial(if_range: Option<&str>, etag: &str) -> bool {
    match if_range.map(str::trim) {
        None => true,
        Some(v) => !v.starts_with("W/") && !etag.starts_with("W/") && v == etag,
    }
}

/// `Content-Disposition` (RFC 6266) for a download: `attachment` or `inline`, a `filename`
/// for old clients in which anything but printable ASCII, and `"`, `\` and `%`, becomes `_`,
/// and `filename*` with the exact name in UTF-8, percent-encoded (RFC 8187). The value never
/// holds a control character, so it is always a valid header value. An empty name is
/// `download`.
pub fn content_disposition(filename: &str, inline: bool) -> String {
    let name = if filename.is_empty() {
        "download"
    } else {
        filename
    };
    let fallback: String = name
        .chars()
        .map(|c| match c {
            '"' | '\\' | '%' => '_',
            c if c.is_ascii_graphic() || c == ' ' => c,
            _ => '_',
        })
        .collect();
    let mut encoded = String::with_capacity(name.len() * 3);
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
            encoded.push(b as char);
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    let kind = if inline { "inline" } else { "attachment" };
    format!("{kind}; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

/// The strong `ETag` of a file version: `"<fingerprint>-<version id>"`, quoted. The version id
/// keeps two versions with the same bytes apart; characters an entity tag cannot hold are
/// dropped (only ASCII letters, digits, `-`, `_` and `.` stay).
pub fn etag(fingerprint_hex: &str, version_id: &str) -> String {
    let keep = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .collect()
    };
    format!("\"{}-{}\"", keep(fingerprint_hex), keep(version_id))
}

/// Whether `If-None-Match` matches `etag`, so the answer is 304 (RFC 9110 §13.1.2): `*`, or
/// any tag of the list equal under the weak comparison (`W/` ignored on both sides). A
/// malformed list matches up to the first malformed member only.
pub fn if_none_match_hits(header: Option<&str>, etag: &str) -> bool {
    let Some(h) = header else {
        return false;
    };
    if h.trim() == "*" {
        return true;
    }
    let want = opaque(etag);
    let mut rest = h;
    loop {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        if rest.is_empty() {
            return false;
        }
        rest = rest.strip_prefix("W/").unwrap_or(rest);
        let Some(body) = rest.strip_prefix('"') else {
            return false;
        };
        let Some(end) = body.find('"') else {
            return false;
        };
        if body[..end] == *want {
            return true;
        }
        rest = &body[end + 1..];
    }
}

/// The opaque part of an entity tag: without `W/` and the quotes.
fn opaque(tag: &str) -> &str {
    let t = tag.trim();
    let t = t.strip_prefix("W/").unwrap_or(t);
    t.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(t)
}

/// Whether content of this MIME type may be shown by the browser (`Content-Disposition:
/// inline`); everything else downloads as an attachment. Only types that cannot run script in
/// the server's origin: raster images (not SVG, which is XML with script), PDF (the browsers'
/// viewers render it without access to the page's origin), and common audio and video. Never
/// HTML, XHTML, XML, SVG, JavaScript, nor any `text/*` (a browser may render or sniff text).
/// Parameters (`; charset=…`) and case are ignored.
pub fn serve_inline(mime: &str) -> bool {
    let base = mime.split(';').next().unwrap_or("").trim();
    const INLINE: &[&str] = &[
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "image/bmp",
        "image/avif",
        "image/vnd.microsoft.icon",
        "image/x-icon",
        "application/pdf",
        "audio/mpeg",
        "audio/wav",
        "audio/ogg",
        "audio/flac",
        "audio/mp4",
        "audio/aac",
        "audio/webm",
        "video/mp4",
        "video/webm",
        "video/ogg",
        "video/quicktime",
    ];
    INLINE.iter().any(|t| t.eq_ignore_ascii_case(base))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    // --- roles ---------------------------------------------------------------------------

    #[test]
    fn roles_are_the_reference_ids_names_ranks_and_kinds() {
        let got: Vec<_> = ROLES
            .iter()
            .map(|r| (r.id, r.name, r.rank, r.kind.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (1, "Manager", 1, "d"),
                (2, "Collaborator", 2, "d"),
                (3, "Downloader", 3, "d"),
                (4, "Viewer", 4, "d"),
                (5, "Uploader", 5, "d"),
                (8, "Collaborator", 2, "f"),
                (9, "Viewer", 4, "f"),
            ]
        );
        assert_eq!(role(1).map(|r| r.name), Some("Manager"));
        assert_eq!(role(9).map(|r| r.kind), Some(ObjectKind::File));
        for id in [0, 6, 7, 10, -1, i64::MAX] {
            assert!(role(id).is_none(), "{id}");
        }
    }

    #[test]
    fn object_kind_wire_form() {
        for k in [ObjectKind::Folder, ObjectKind::File] {
            assert_eq!(ObjectKind::parse(k.as_str()), Some(k));
            assert_eq!(k.to_string(), k.as_str());
        }
        assert_eq!(ObjectKind::Folder.as_str(), "d");
        assert_eq!(ObjectKind::File.as_str(), "f");
        for s in ["", "D", "F", "dir", " d"] {
            assert_eq!(ObjectKind::parse(s), None, "{s:?}");
        }
    }

    /// Every cell of the role table. Columns: Owner, Manager 1, Collaborator 2, Downloader 3,
    /// Viewer 4, Uploader 5, file Collaborator 8, file Viewer 9; `x` allowed, `.` refused.
    #[test]
    fn the_whole_permission_matrix() {
        let columns = [
            Access::Owner,
            Access::Role(1),
            Access::Role(2),
            Access::Role(3),
            Access::Role(4),
            Access::Role(5),
            Access::Role(8),
            Access::Role(9),
        ];
        let matrix = [
            //                        O M C D V U c v
            (Action::List, "xxxxxxxx"),
            (Action::Preview, "xxxxx.xx"),
            (Action::Download, "xxxx..x."),
            (Action::Upload, "xxx..xx."),
            (Action::CreateFolder, "xxx....."),
            (Action::Rename, "xxx...x."),
            (Action::Delete, "xxx....."),
            (Action::Recover, "xxx....."),
            (Action::MoveOut, "xxx....."),
            (Action::Copy, "xxxx..x."),
            (Action::ManageMembers, "xx......"),
            (Action::Comment, "xxxx..x."),
            (Action::ReadComments, "xxxxx.xx"),
        ];
        assert_eq!(matrix.len(), Action::ALL.len());
        for ((action, row), listed) in matrix.iter().zip(Action::ALL) {
            assert_eq!(*action, listed, "rows follow Action::ALL");
            for (access, cell) in columns.iter().zip(row.chars()) {
                assert_eq!(
                    allows(*access, *action),
                    cell == 'x',
                    "{access:?} {action:?}"
                );
            }
        }
    }

    #[test]
    fn an_unknown_role_allows_nothing() {
        for id in [0, 6, 7, 10, -3] {
            for a in Action::ALL {
                assert!(!allows(Access::Role(id), a), "{id} {a:?}");
            }
        }
    }

    #[test]
    fn strongest_grant() {
        use Access::{Owner, Role};
        for r in [1, 2, 5, 9, 77] {
            assert_eq!(strongest(Owner, Role(r)), Owner);
            assert_eq!(strongest(Role(r), Owner), Owner);
        }
        assert_eq!(strongest(Owner, Owner), Owner);
        // Smaller rank wins, in either order.
        for (a, b, want) in [
            (1, 4, 1),
            (2, 3, 2),
            (3, 4, 3),
            (4, 5, 4),
            (8, 4, 8),
            (9, 3, 3),
            (1, 8, 1),
            // Equal rank: the wider role (folder Collaborator allows delete and move).
            (2, 8, 2),
        ] {
            assert_eq!(strongest(Role(a), Role(b)), Role(want), "{a} {b}");
            assert_eq!(strongest(Role(b), Role(a)), Role(want), "{b} {a}");
        }
        // Folder and file Viewer allow the same: either is right, the first is kept.
        assert_eq!(strongest(Role(4), Role(9)), Role(4));
        assert_eq!(strongest(Role(9), Role(4)), Role(9));
        // A known role beats an unknown id.
        assert_eq!(strongest(Role(99), Role(5)), Role(5));
        assert_eq!(strongest(Role(5), Role(99)), Role(5));
        assert_eq!(strongest(Role(99), Role(98)), Role(99));
        // Always one of the two, never of a weaker rank than either.
        for a in ROLES {
            for b in ROLES {
                let s = strongest(Role(a.id), Role(b.id));
                let Role(id) = s else { panic!() };
                assert!(id == a.id || id == b.id);
                assert!(role(id).unwrap().rank <= a.rank.min(b.rank));
            }
        }
    }

    #[test]
    fn role_table_markdown_lists_every_cell() {
        let t = role_table_markdown();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2 + Action::ALL.len());
        assert_eq!(
            lines[0],
            "| action | Owner | Manager (1) | Collaborator (2) | Downloader (3) | Viewer (4) | Uploader (5) | Collaborator, file (8) | Viewer, file (9) |"
        );
        assert_eq!(lines[1], "|---|---|---|---|---|---|---|---|---|");
        assert_eq!(lines[2], "| list | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ |");
        assert_eq!(lines[12], "| manage members | ✓ | ✓ | | | | | | |");
        for (line, action) in lines[2..].iter().zip(Action::ALL) {
            assert!(line.starts_with(&format!("| {} |", action.as_str())));
            assert_eq!(line.matches('|').count(), 10, "{line}");
        }
    }

    #[test]
    fn the_role_table_in_the_docs_is_the_generated_one() {
        let table = role_table_markdown();
        let doc = include_str!("../../../docs/content-rules.md");
        assert!(
            doc.contains(&table),
            "paste role_table_markdown() into docs/content-rules.md"
        );
        let source = include_str!("content.rs");
        for line in table.lines() {
            assert!(
                source.contains(&format!("//! {line}\n")),
                "module documentation lacks {line}"
            );
        }
    }

    // --- names ---------------------------------------------------------------------------

    fn refused(name: &str) -> ApiError {
        validate_name(name).expect_err(name)
    }

    #[test]
    fn valid_names() {
        let long = "a".repeat(251) + ".txt";
        let long_multibyte = "é".repeat(125) + ".txt";
        for name in [
            "report.pdf",
            ".bashrc",
            "a",
            "a..b",
            "Zoë – résumé ✓.docx",
            "日本語のファイル",
            "two  inner spaces",
            "Meeting: notes?",
            "con",
            "-",
            "..a",
            &long,
            &long_multibyte,
        ] {
            assert_eq!(validate_name(name), Ok(()), "{name:?}");
        }
        assert_eq!(long.len(), 255);
        assert_eq!(long_multibyte.len(), 254);
    }

    #[test]
    fn blank_names_are_required() {
        for name in ["", " ", "\u{3000}"] {
            let e = refused(name);
            assert_eq!(e.code, ErrorCode::InputRequired, "{name:?}");
            assert_eq!(e.field.as_deref(), Some("name"));
            assert_eq!(e.status, 422);
        }
    }

    #[test]
    fn invalid_names() {
        let too_long = "a".repeat(256);
        let too_long_multibyte = "é".repeat(128);
        for (name, why) in [
            (too_long.as_str(), "255 bytes"),
            (too_long_multibyte.as_str(), "255 bytes"),
            (".", ". or .."),
            ("..", ". or .."),
            ("a/b", "/"),
            ("/", "/"),
            ("a\\b", "/"),
            ("a\0b", "control"),
            ("a\nb", "control"),
            ("a\rb", "control"),
            ("a\tb", "control"),
            ("\u{7f}x", "control"),
            ("x\u{85}", "control"),
            ("invoice\u{202E}fdp.exe", "direction"),
            ("a\u{202A}b", "direction"),
            ("a\u{2066}b", "direction"),
            ("a\u{2069}b", "direction"),
            ("a\u{2028}b", "separators"),
            ("a\u{2029}b", "separators"),
            (" a", "space"),
            ("a ", "space"),
            ("a\u{a0}", "space"),
            ("\u{2003}a", "space"),
            ("a.", "dot"),
            ("...", "dot"),
            ("report.pdf.", "dot"),
        ] {
            let e = refused(name);
            assert_eq!(e.code, ErrorCode::InputInvalidFormat, "{name:?}");
            assert_eq!(e.status, 422);
            assert_eq!(e.field.as_deref(), Some("name"));
            assert!(e.message.contains(why), "{name:?}: {}", e.message);
            assert!(e.message.contains("(name:"), "{}", e.message);
        }
    }

    #[test]
    fn the_field_can_be_named() {
        let e = validate_name_as("a/b", "filename").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("filename"));
        assert!(e.message.contains("(filename:"));
        let e = validate_name_as("", "filename").unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::InputRequired, Some("filename"))
        );
        assert_eq!(validate_name_as("ok.txt", "filename"), Ok(()));
    }

    #[test]
    fn folded_names() {
        assert_eq!(fold_name("Report.PDF"), "report.pdf");
        // The short way for ASCII folds as the long way does, every character.
        let long = |n: &str| {
            let nfc = icu_normalizer::ComposingNormalizerBorrowed::new_nfc();
            nfc.normalize(&nfc.normalize(n).to_lowercase()).into_owned()
        };
        let ascii: String = (0u8..0x80).map(char::from).collect();
        assert_eq!(fold_name(&ascii), long(&ascii));
        assert_eq!(fold_name("report.pdf"), fold_name("REPORT.pdf"));
        // Decomposed and composed accents meet.
        assert_eq!(fold_name("Cafe\u{301}"), "caf\u{e9}");
        assert_eq!(fold_name("CAF\u{c9}"), fold_name("cafe\u{301}"));
        assert_eq!(fold_name("Ω"), fold_name("ω"));
        assert_eq!(fold_name("ΣΑΣ"), fold_name("σας"));
        // Lower case, not full case folding.
        assert_ne!(fold_name("Straße"), fold_name("STRASSE"));
        assert_eq!(fold_name("Straße"), "straße");
        // Distinct names stay distinct.
        assert_ne!(fold_name("a.txt"), fold_name("a.txt "));
        assert_ne!(fold_name("a"), fold_name("b"));
        assert_eq!(fold_name(""), "");
        // The result is NFC: U+0130 lower-cases to i + U+0307, which has no composed form.
        assert_eq!(fold_name("\u{130}"), "i\u{307}");
    }

    #[test]
    fn numbered_names() {
        assert_eq!(numbered_name("report.pdf", 1), "report (1).pdf");
        assert_eq!(numbered_name("folder", 2), "folder (2)");
        assert_eq!(numbered_name(".bashrc", 1), ".bashrc (1)");
        assert_eq!(numbered_name("archive.tar.gz", 3), "archive.tar (3).gz");
        assert_eq!(numbered_name("v1.2 draft", 1), "v1.2 draft (1)");
        assert_eq!(numbered_name("Résumé.DOCX", 10), "Résumé (10).DOCX");
        assert_eq!(numbered_name("report.pdf", 0), "report.pdf");
        assert_eq!(
            numbered_name("x.y", u32::MAX),
            format!("x ({}).y", u32::MAX)
        );
        assert_eq!(numbered_name("report (1).pdf", 2), "report (1) (2).pdf");
    }

    #[test]
    fn numbered_names_stay_within_the_limit() {
        let cases = [
            "a".repeat(251) + ".txt",
            "é".repeat(125) + ".txt",
            "é".repeat(127),
            "日".repeat(85),
            "a.".to_string() + &"x".repeat(253),
            "b".repeat(255),
            "é.".to_string() + &"x".repeat(249),
            "ab.".to_string() + &"x".repeat(249),
        ];
        for name in &cases {
            assert_eq!(validate_name(name), Ok(()), "{name}");
            for n in [1, 99, u32::MAX] {
                let got = numbered_name(name, n);
                assert!(got.len() <= NAME_MAX_BYTES, "{got} {}", got.len());
                assert!(got.contains(&format!(" ({n})")), "{got}");
                assert_eq!(validate_name(&got), Ok(()), "{got}");
                assert_ne!(fold_name(&got), fold_name(name));
            }
        }
        let kept = numbered_name(&("a".repeat(251) + ".txt"), 1);
        assert!(kept.ends_with("a (1).txt"), "{kept}");
        assert_eq!(kept.len(), 255);
        let kept = numbered_name(&("é".repeat(125) + ".txt"), 1);
        assert!(kept.ends_with("é (1).txt"), "{kept}");
        // A long extension is numbered as a whole name.
        let long_ext = "a.".to_string() + &"x".repeat(253);
        assert!(numbered_name(&long_ext, 1).ends_with("x (1)"));
        // One byte left for a two-byte stem: the whole name is numbered.
        let tight = "é.".to_string() + &"x".repeat(249);
        assert!(numbered_name(&tight, 1).starts_with("é.xx"));
        assert!(numbered_name(&tight, 1).ends_with("x (1)"));
        let tight = "ab.".to_string() + &"x".repeat(249);
        assert_eq!(
            numbered_name(&tight, 1),
            "a (1).".to_string() + &"x".repeat(249)
        );
    }

    #[test]
    fn extensions() {
        for (name, ext) in [
            ("report.pdf", Some("pdf")),
            ("archive.tar.gz", Some("gz")),
            ("photo.JPG", Some("JPG")),
            ("a.b.c.d", Some("d")),
            ("..a", Some("a")),
            (".bashrc", None),
            ("notes.", None),
            ("noext", None),
            ("", None),
            ("v1.2 draft", None),
            ("a.b c", None),
            ("x.7z", Some("7z")),
        ] {
            assert_eq!(extension(name), ext, "{name:?}");
        }
    }

    #[test]
    fn mime_types() {
        for (name, mime) in [
            ("a.pdf", "application/pdf"),
            ("a.PDF", "application/pdf"),
            ("photo.JPG", "image/jpeg"),
            ("photo.jpeg", "image/jpeg"),
            ("p.png", "image/png"),
            ("x.svg", "image/svg+xml"),
            ("page.html", "text/html"),
            ("notes.txt", "text/plain"),
            ("data.csv", "text/csv"),
            ("archive.tar.gz", "application/gzip"),
            (
                "deck.pptx",
                "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            ),
            ("movie.mp4", "video/mp4"),
            ("song.mp3", "audio/mpeg"),
            ("noext", "application/octet-stream"),
            (".png", "application/octet-stream"),
            ("a.unknownext", "application/octet-stream"),
            ("a.", "application/octet-stream"),
            ("", "application/octet-stream"),
        ] {
            assert_eq!(guess_mime(name), mime, "{name:?}");
        }
        let mut seen = std::collections::HashSet::new();
        for (ext, mime) in MIME_TYPES {
            assert_eq!(*ext, ext.to_ascii_lowercase(), "table keys are lower case");
            assert!(seen.insert(*ext), "duplicate {ext}");
            assert!(mime.contains('/'));
        }
    }

    // --- chunks --------------------------------------------------------------------------

    const MAX: u64 = 64 * 1024 * 1024;

    fn normal(index: Option<u32>, size: u64, last: bool) -> ChunkMeta {
        ChunkMeta {
            index,
            last_chunk: last,
            compression: Compression::Normal,
            compression_size: size,
            original_size: size,
        }
    }

    fn state(
        total_chunks: Option<u32>,
        total_size: Option<u64>,
        done: u32,
        size: u64,
    ) -> UploadState {
        UploadState {
            total_chunks,
            total_size,
            uploaded_chunks: done,
            uploaded_size: size,
            last_chunk_size: (done > 0).then_some(10),
        }
    }

    fn refused_on(s: &UploadState, c: &ChunkMeta) -> (ErrorCode, String) {
        let e = check_chunk(s, c, MAX).unwrap_err();
        assert_eq!(e.status, 422);
        (e.code, e.field.unwrap())
    }

    fn field_of(s: &UploadState, c: &ChunkMeta) -> String {
        let (code, field) = refused_on(s, c);
        assert_eq!(code, ErrorCode::InvalidParameter);
        field
    }

    #[test]
    fn compression_modes() {
        for (s, c) in [
            ("NORMAL", Compression::Normal),
            ("normal", Compression::Normal),
            ("Gzip", Compression::Gzip),
            ("ZLIB", Compression::Zlib),
        ] {
            assert_eq!(Compression::parse(s), Ok(c));
            assert_eq!(s.parse::<Compression>(), Ok(c));
        }
        for c in [Compression::Normal, Compression::Gzip, Compression::Zlib] {
            assert_eq!(Compression::parse(c.as_str()), Ok(c));
            assert_eq!(c.to_string(), c.as_str());
        }
        for s in ["", "deflate", "BROTLI", " GZIP", "NONE"] {
            let e = Compression::parse(s).unwrap_err();
            assert_eq!(e.code, ErrorCode::InputNotInList, "{s:?}");
            assert_eq!(e.field.as_deref(), Some("compressionMode"));
            assert_eq!(e.status, 422);
        }
    }

    #[test]
    fn chunks_in_order_complete_the_upload() {
        let mut s = state(Some(3), Some(30), 0, 0);
        for i in 1..=3 {
            let d = check_chunk(&s, &normal(Some(i), 10, false), MAX).unwrap();
            assert_eq!(
                d,
                ChunkDecision::Accept {
                    index: i,
                    completes: i == 3
                }
            );
            s.uploaded_chunks = i;
            s.uploaded_size += 10;
            s.last_chunk_size = Some(10);
        }
        // After completion nothing more fits, but the last chunk's retry is still recognised.
        assert_eq!(field_of(&s, &normal(Some(4), 10, false)), "index");
        assert_eq!(field_of(&s, &normal(None, 10, false)), "index");
        assert_eq!(
            check_chunk(&s, &normal(Some(3), 10, true), MAX),
            Ok(ChunkDecision::RepeatOfLast)
        );
    }

    #[test]
    fn an_absent_index_is_the_next() {
        let s = state(None, None, 4, 40);
        assert_eq!(
            check_chunk(&s, &normal(None, 10, false), MAX),
            Ok(ChunkDecision::Accept {
                index: 5,
                completes: false
            })
        );
        assert_eq!(
            check_chunk(&s, &normal(None, 10, true), MAX),
            Ok(ChunkDecision::Accept {
                index: 5,
                completes: true
            })
        );
        let full = state(None, None, u32::MAX, 0);
        assert_eq!(field_of(&full, &normal(None, 1, false)), "index");
    }

    #[test]
    fn out_of_order_indexes_are_refused() {
        let s = state(Some(10), None, 2, 20);
        for i in [0, 1, 4, 10, u32::MAX] {
            assert_eq!(field_of(&s, &normal(Some(i), 10, false)), "index", "{i}");
        }
        let fresh = state(Some(10), None, 0, 0);
        assert_eq!(field_of(&fresh, &normal(Some(0), 10, false)), "index");
        assert_eq!(field_of(&fresh, &normal(Some(2), 10, false)), "index");
        assert!(check_chunk(&fresh, &normal(Some(1), 10, false), MAX).is_ok());
        let e = check_chunk(&s, &normal(Some(5), 10, false), MAX).unwrap_err();
        assert!(e.message.contains("expected chunk 3"), "{}", e.message);
    }

    #[test]
    fn a_repeat_of_the_last_chunk_is_a_retry() {
        let s = state(Some(5), Some(50), 2, 20);
        assert_eq!(
            check_chunk(&s, &normal(Some(2), 10, false), MAX),
            Ok(ChunkDecision::RepeatOfLast)
        );
        // Another size is not the same chunk.
        assert_eq!(field_of(&s, &normal(Some(2), 9, false)), "index");
        // Without the size on record any size is taken as the retry.
        let unknown = UploadState {
            last_chunk_size: None,
            ..s
        };
        assert_eq!(
            check_chunk(&unknown, &normal(Some(2), 3, false), MAX),
            Ok(ChunkDecision::RepeatOfLast)
        );
        // Only the last one, and only when named.
        assert_eq!(field_of(&s, &normal(Some(1), 10, false)), "index");
        assert_eq!(
            check_chunk(&s, &normal(None, 10, false), MAX),
            Ok(ChunkDecision::Accept {
                index: 3,
                completes: false
            })
        );
    }

    #[test]
    fn index_past_total_chunks() {
        let s = state(Some(2), None, 2, 20);
        assert_eq!(field_of(&s, &normal(Some(3), 10, false)), "index");
        let one = state(Some(1), None, 0, 0);
        assert_eq!(
            check_chunk(&one, &normal(Some(1), 10, false), MAX),
            Ok(ChunkDecision::Accept {
                index: 1,
                completes: true
            })
        );
    }

    #[test]
    fn chunk_size_limits() {
        let s = state(None, None, 0, 0);
        assert!(check_chunk(&s, &normal(Some(1), MAX, false), MAX).is_ok());
        assert_eq!(
            field_of(&s, &normal(Some(1), MAX + 1, false)),
            "originalSize"
        );
        let mut c = normal(Some(1), 100, false);
        c.compression_size = 99;
        assert_eq!(field_of(&s, &c), "compressionSize");
        c.compression_size = 101;
        assert_eq!(field_of(&s, &c), "compressionSize");
        for mode in [Compression::Gzip, Compression::Zlib] {
            let mut c = ChunkMeta {
                compression: mode,
                compression_size: 50,
                ..normal(Some(1), 100, false)
            };
            assert!(check_chunk(&s, &c, MAX).is_ok());
            // Incompressible data grows a little.
            c.compression_size = 130;
            assert!(check_chunk(&s, &c, MAX).is_ok());
            c.compression_size = max_compressed_size(100);
            assert!(check_chunk(&s, &c, MAX).is_ok());
            c.compression_size = max_compressed_size(100) + 1;
            assert_eq!(field_of(&s, &c), "compressionSize");
            c.compression_size = 0;
            assert_eq!(field_of(&s, &c), "compressionSize");
            // An empty chunk still has a header.
            c.original_size = 0;
            c.compression_size = 20;
            assert!(check_chunk(&s, &c, MAX).is_ok());
        }
        assert_eq!(max_compressed_size(u64::MAX), u64::MAX);
        assert_eq!(max_compressed_size(0), 1024);
        assert_eq!(max_compressed_size(1_000_000), 1_002_024);
    }

    #[test]
    fn total_size_is_enforced() {
        let s = state(None, Some(25), 2, 20);
        assert_eq!(field_of(&s, &normal(Some(3), 10, false)), "originalSize");
        assert_eq!(
            check_chunk(&s, &normal(Some(3), 5, true), MAX),
            Ok(ChunkDecision::Accept {
                index: 3,
                completes: true
            })
        );
        // Completing short of the declared size.
        assert_eq!(field_of(&s, &normal(Some(3), 4, true)), "totalSize");
        let counted = state(Some(3), Some(25), 2, 20);
        assert_eq!(field_of(&counted, &normal(Some(3), 4, false)), "totalSize");
        // Not completing: a partial sum is fine.
        assert!(check_chunk(&s, &normal(Some(3), 4, false), MAX).is_ok());
        // Sums that overflow.
        let huge = state(None, None, 1, u64::MAX - 5);
        assert_eq!(field_of(&huge, &normal(Some(2), 10, false)), "originalSize");
    }

    #[test]
    fn last_chunk_rules() {
        // Without totals, lastChunk completes.
        let s = state(None, None, 0, 0);
        assert_eq!(
            check_chunk(&s, &normal(Some(1), 10, true), MAX),
            Ok(ChunkDecision::Accept {
                index: 1,
                completes: true
            })
        );
        // Before the declared number of chunks it is refused.
        let s = state(Some(4), None, 1, 10);
        assert_eq!(field_of(&s, &normal(Some(2), 10, true)), "lastChunk");
        // On the last index it is redundant but fine.
        let s = state(Some(2), None, 1, 10);
        assert_eq!(
            check_chunk(&s, &normal(Some(2), 10, true), MAX),
            Ok(ChunkDecision::Accept {
                index: 2,
                completes: true
            })
        );
    }

    #[test]
    fn an_empty_file_is_one_empty_chunk() {
        let s = state(Some(1), Some(0), 0, 0);
        assert_eq!(
            check_chunk(&s, &normal(Some(1), 0, false), MAX),
            Ok(ChunkDecision::Accept {
                index: 1,
                completes: true
            })
        );
        let s = state(None, Some(0), 0, 0);
        assert_eq!(
            check_chunk(&s, &normal(None, 0, true), MAX),
            Ok(ChunkDecision::Accept {
                index: 1,
                completes: true
            })
        );
    }

    #[test]
    fn received_counts() {
        let c = ChunkMeta {
            compression: Compression::Gzip,
            compression_size: 40,
            ..normal(Some(1), 100, false)
        };
        assert_eq!(check_received(&c, 40, 100), Ok(()));
        let e = check_received(&c, 39, 100).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref(), e.status),
            (ErrorCode::InvalidParameter, Some("compressionSize"), 422)
        );
        let e = check_received(&c, 40, 101).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("originalSize"));
        let e = check_received(&c, 41, 99).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("compressionSize"));
    }

    // --- decoder -------------------------------------------------------------------------

    fn sample(len: usize) -> Vec<u8> {
        // Text-like with some noise, so that it compresses but not trivially.
        let mut x: u32 = 0x1234_5678;
        (0..len)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                if i % 7 == 0 {
                    (x % 251) as u8
                } else {
                    b"the quick brown fox "[i % 20]
                }
            })
            .collect()
    }

    fn compress(mode: Compression, data: &[u8]) -> Vec<u8> {
        let level = flate2::Compression::default();
        match mode {
            Compression::Normal => data.to_vec(),
            Compression::Gzip => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Compression::Zlib => {
                let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
        }
    }

    fn decode_in_pieces(
        mode: Compression,
        wire: &[u8],
        original: u64,
        piece: usize,
    ) -> Result<Vec<u8>, ApiError> {
        let mut d = ChunkDecoder::new(mode, original, wire.len() as u64);
        let mut out = Vec::new();
        for p in wire.chunks(piece.max(1)) {
            d.feed(p, &mut out)?;
        }
        if wire.is_empty() {
            d.feed(&[], &mut out)?;
        }
        let n = d.finish(&mut out)?;
        assert_eq!(n, out.len() as u64);
        Ok(out)
    }

    fn field(r: Result<Vec<u8>, ApiError>) -> String {
        let e = r.unwrap_err();
        assert_eq!((e.code, e.status), (ErrorCode::InvalidParameter, 422));
        e.field.unwrap()
    }

    #[test]
    fn round_trips_in_small_pieces() {
        for len in [0, 1, 1000, 70_000] {
            let data = sample(len);
            for mode in [Compression::Normal, Compression::Gzip, Compression::Zlib] {
                let wire = compress(mode, &data);
                let pieces: &[usize] = if len > 10_000 {
                    &[7, 4096, 100_000]
                } else {
                    &[1, 3, 64, 100_000]
                };
                for &piece in pieces {
                    let out = decode_in_pieces(mode, &wire, len as u64, piece)
                        .unwrap_or_else(|e| panic!("{mode} {len} {piece}: {e}"));
                    assert!(out == data, "{mode} {len} {piece}");
                }
            }
        }
    }

    #[test]
    fn gzip_headers_with_optional_fields() {
        let data = sample(5000);
        let mut e = flate2::GzBuilder::new()
            .filename("name.txt")
            .comment("a comment")
            .extra(vec![1, 2, 3, 4])
            .write(Vec::new(), flate2::Compression::fast());
        e.write_all(&data).unwrap();
        let wire = e.finish().unwrap();
        for piece in [1, 5, 13, 10_000] {
            assert!(decode_in_pieces(Compression::Gzip, &wire, 5000, piece).unwrap() == data);
        }
        // A header checksum (FHCRC), built by hand around a raw deflate body.
        let mut body = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        body.write_all(&data).unwrap();
        let body = body.finish().unwrap();
        let mut header = vec![0x1f, 0x8b, 8, 0x02 | 0x08, 0, 0, 0, 0, 0, 255];
        header.extend_from_slice(b"f.txt\0");
        let mut crc = Crc::new();
        crc.update(&header);
        let hcrc = (crc.sum() as u16).to_le_bytes();
        let mut whole = Crc::new();
        whole.update(&data);
        let trailer = [whole.sum().to_le_bytes(), (data.len() as u32).to_le_bytes()].concat();
        let good = [header.clone(), hcrc.to_vec(), body.clone(), trailer.clone()].concat();
        for piece in [1, 11, 10_000] {
            assert!(decode_in_pieces(Compression::Gzip, &good, 5000, piece).unwrap() == data);
        }
        let bad_hcrc = [header.clone(), vec![hcrc[0] ^ 1, hcrc[1]], body, trailer].concat();
        assert_eq!(
            field(decode_in_pieces(Compression::Gzip, &bad_hcrc, 5000, 3)),
            "content"
        );
        // Reserved flag bits.
        let mut reserved = good.clone();
        reserved[3] |= 0x20;
        assert_eq!(
            field(decode_in_pieces(Compression::Gzip, &reserved, 5000, 100)),
            "content"
        );
    }

    #[test]
    fn decompression_bombs_fail_fast() {
        // 100 MiB of zeros, compressed without ever holding them.
        let zeros = vec![0u8; 1 << 20];
        for mode in [Compression::Gzip, Compression::Zlib] {
            let mut wire = Vec::new();
            {
                let level = flate2::Compression::fast();
                let mut w: Box<dyn Write> = match mode {
                    Compression::Gzip => Box::new(flate2::write::GzEncoder::new(&mut wire, level)),
                    _ => Box::new(flate2::write::ZlibEncoder::new(&mut wire, level)),
                };
                for _ in 0..100 {
                    w.write_all(&zeros).unwrap();
                }
            }
            assert!(wire.len() < 1 << 20, "{}", wire.len());
            let mut d = ChunkDecoder::new(mode, 1024, wire.len() as u64);
            let mut out = Vec::new();
            let mut fed = 0;
            let mut err = None;
            for piece in wire.chunks(4096) {
                fed += 1;
                if let Err(e) = d.feed(piece, &mut out) {
                    err = Some(e);
                    break;
                }
            }
            let e = err.expect("the bomb is refused");
            assert_eq!(e.field.as_deref(), Some("originalSize"), "{mode}");
            assert_eq!(fed, 1, "{mode}: refused on the first piece");
            assert!(out.len() <= 1024, "{}", out.len());
            assert!(out.capacity() <= 64 * 1024, "{}", out.capacity());
        }
    }

    #[test]
    fn output_is_bounded_by_the_declared_size() {
        let data = sample(10_000);
        for mode in [Compression::Normal, Compression::Gzip, Compression::Zlib] {
            let wire = compress(mode, &data);
            assert!(decode_in_pieces(mode, &wire, 10_000, 500).is_ok());
            // Declared one byte short: refused.
            assert_eq!(
                field(decode_in_pieces(mode, &wire, 9_999, 500)),
                "originalSize",
                "{mode}"
            );
            assert_eq!(
                field(decode_in_pieces(mode, &wire, 0, 1)),
                "originalSize",
                "{mode}"
            );
            // Declared larger: the decoder answers the real count for check_received.
            let out = decode_in_pieces(mode, &wire, 20_000, 500).unwrap();
            assert_eq!(out.len(), 10_000);
        }
    }

    #[test]
    fn input_is_bounded_by_the_declared_size() {
        let data = sample(3000);
        for mode in [Compression::Normal, Compression::Gzip, Compression::Zlib] {
            let wire = compress(mode, &data);
            let mut d = ChunkDecoder::new(mode, 3000, wire.len() as u64 - 1);
            let mut out = Vec::new();
            let e = d.feed(&wire, &mut out).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("compressionSize"), "{mode}");
            // Refused before anything is decoded.
            assert!(out.is_empty());
            // And across pieces.
            let mut d = ChunkDecoder::new(mode, 3000, 10);
            d.feed(&wire[..10], &mut out).unwrap();
            let e = d.feed(&wire[10..11], &mut out).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("compressionSize"));
        }
    }

    #[test]
    fn corrupt_streams_are_refused() {
        let data = sample(20_000);
        for mode in [Compression::Gzip, Compression::Zlib] {
            let wire = compress(mode, &data);
            let n = data.len() as u64;
            // Not a stream at all.
            assert_eq!(
                field(decode_in_pieces(mode, b"hello, plain text", n, 4)),
                "content",
                "{mode}"
            );
            // A flipped bit in the body: bad data or a checksum mismatch.
            let mut flipped = wire.clone();
            let mid = flipped.len() / 2;
            flipped[mid] ^= 0x10;
            assert_eq!(
                field(decode_in_pieces(mode, &flipped, n, 1000)),
                "content",
                "{mode}"
            );
            // A wrong checksum at the end.
            let mut bad_sum = wire.clone();
            let at = bad_sum.len() - if mode == Compression::Gzip { 8 } else { 1 };
            bad_sum[at] ^= 1;
            assert_eq!(
                field(decode_in_pieces(mode, &bad_sum, n, 1000)),
                "content",
                "{mode}"
            );
            // Cut short, anywhere.
            for cut in [1, 2, 4, 8, wire.len() / 2, wire.len() - 1] {
                let short = &wire[..wire.len() - cut];
                assert_eq!(
                    field(decode_in_pieces(mode, short, n, 1000)),
                    "content",
                    "{mode} cut {cut}"
                );
            }
            // Bytes after the end.
            let mut long = wire.clone();
            long.push(0);
            assert_eq!(
                field(decode_in_pieces(mode, &long, n, 1000)),
                "content",
                "{mode}"
            );
            // Nothing at all.
            assert_eq!(field(decode_in_pieces(mode, &[], 0, 1)), "content");
        }
        // A gzip stream whose size field is wrong.
        let mut wrong_size = compress(Compression::Gzip, &data);
        let at = wrong_size.len() - 4;
        wrong_size[at] ^= 1;
        assert_eq!(
            field(decode_in_pieces(
                Compression::Gzip,
                &wrong_size,
                20_000,
                1000
            )),
            "content"
        );
        // Zlib is not gzip and the other way round.
        let z = compress(Compression::Zlib, &data);
        assert_eq!(
            field(decode_in_pieces(Compression::Gzip, &z, 20_000, 1000)),
            "content"
        );
        let g = compress(Compression::Gzip, &data);
        assert_eq!(
            field(decode_in_pieces(Compression::Zlib, &g, 20_000, 1000)),
            "content"
        );
        // Garbage is refused at its first byte.
        let mut d = ChunkDecoder::new(Compression::Gzip, 100, 100);
        assert!(d.feed(&[0x00], &mut Vec::new()).is_err());
    }

    #[test]
    fn normal_chunks_pass_through() {
        let mut d = ChunkDecoder::new(Compression::Normal, 5, 5);
        let mut out = Vec::new();
        d.feed(b"ab", &mut out).unwrap();
        d.feed(b"", &mut out).unwrap();
        d.feed(b"cde", &mut out).unwrap();
        assert_eq!(d.finish(&mut out).unwrap(), 5);
        assert_eq!(out, b"abcde");
        // Fewer bytes than declared: the decoder reports them, check_received refuses.
        let mut d = ChunkDecoder::new(Compression::Normal, 5, 5);
        d.feed(b"abc", &mut out).unwrap();
        assert_eq!(d.finish(&mut out).unwrap(), 3);
        // More output than declared even though the input fits (sizes disagree).
        let mut d = ChunkDecoder::new(Compression::Normal, 2, 5);
        let e = d.feed(b"abc", &mut Vec::new()).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("originalSize"));
        let d = ChunkDecoder::new(Compression::Zlib, 2, 5);
        assert!(format!("{d:?}").contains("Zlib"));
    }

    #[test]
    fn pass_through_counts_like_feed() {
        let mut d = ChunkDecoder::new(Compression::Normal, 5, 5);
        assert_eq!(d.pass_through(2), Ok(true));
        assert_eq!(d.pass_through(3), Ok(true));
        assert_eq!(d.finish(&mut Vec::new()).unwrap(), 5);
        // Past the declared sizes: the same refusals as feed.
        let mut d = ChunkDecoder::new(Compression::Normal, 5, 5);
        let e = d.pass_through(6).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("compressionSize"));
        let mut d = ChunkDecoder::new(Compression::Normal, 2, 5);
        let e = d.pass_through(3).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("originalSize"));
        // A compressed chunk takes nothing this way: its bytes still count in feed.
        let mut d = ChunkDecoder::new(Compression::Zlib, 100, 3);
        assert_eq!(d.pass_through(3), Ok(false));
        let e = d
            .feed(&[0x78, 0x9c, 0x03, 0x00], &mut Vec::new())
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("compressionSize"));
    }

    // --- downloads -----------------------------------------------------------------------

    #[test]
    fn ranges() {
        use RangeOutcome::{Full, Partial, Unsatisfiable};
        let p = |start, end| Partial { start, end };
        let big = "99999999999999999999999";
        for (header, size, want) in [
            (None, 1000, Full),
            (Some("bytes=0-99"), 1000, p(0, 99)),
            (Some("bytes=0-0"), 1000, p(0, 0)),
            (Some("bytes=0-"), 1000, p(0, 999)),
            (Some("bytes=500-"), 1000, p(500, 999)),
            (Some("bytes=999-"), 1000, p(999, 999)),
            (Some("bytes=-100"), 1000, p(900, 999)),
            (Some("bytes=-1"), 1000, p(999, 999)),
            (Some("bytes=-2000"), 1000, p(0, 999)),
            (Some("bytes=990-2000"), 1000, p(990, 999)),
            (Some("bytes=0-999"), 1000, p(0, 999)),
            (Some("BYTES=1-2"), 1000, p(1, 2)),
            (Some(" bytes = 1-2 "), 1000, p(1, 2)),
            (Some("bytes=1-2,"), 1000, p(1, 2)),
            (Some("bytes=, 1-2"), 1000, p(1, 2)),
            (Some(&format!("bytes=0-{big}")), 1000, p(0, 999)),
            (Some(&format!("bytes=-{big}")), 1000, p(0, 999)),
            (Some("bytes=1000-"), 1000, Unsatisfiable),
            (Some("bytes=1000-1001"), 1000, Unsatisfiable),
            (Some("bytes=5000-6000"), 1000, Unsatisfiable),
            (Some("bytes=-0"), 1000, Unsatisfiable),
            (Some(&format!("bytes={big}-")), 1000, Unsatisfiable),
            // Served whole.
            (Some("bytes=0-1,5-6"), 1000, Full),
            (Some("bytes=5-1"), 1000, Full),
            (Some("bytes=a-b"), 1000, Full),
            (Some("bytes="), 1000, Full),
            (Some("bytes"), 1000, Full),
            (Some(""), 1000, Full),
            (Some("items=0-1"), 1000, Full),
            (Some("bytes=--1"), 1000, Full),
            (Some("bytes=+1-2"), 1000, Full),
            (Some("bytes=1"), 1000, Full),
            (Some("bytes=-"), 1000, Full),
            (Some("bytes=0x1-2"), 1000, Full),
            // Empty content.
            (Some("bytes=0-"), 0, Unsatisfiable),
            (Some("bytes=0-0"), 0, Unsatisfiable),
            (Some("bytes=-0"), 0, Unsatisfiable),
            (Some("bytes=-5"), 0, Full),
            (None, 0, Full),
            (Some("bytes=0-0"), 1, p(0, 0)),
            (Some("bytes=-5"), 1, p(0, 0)),
        ] {
            assert_eq!(parse_range(header, size), want, "{header:?} {size}");
        }
    }

    #[test]
    fn if_range() {
        let tag = etag("abc", "1");
        assert!(if_range_allows_partial(None, &tag));
        assert!(if_range_allows_partial(Some(&tag), &tag));
        assert!(if_range_allows_partial(Some(&format!(" {tag} ")), &tag));
        assert!(!if_range_allows_partial(Some("\"other\""), &tag));
        assert!(!if_range_allows_partial(Some(&format!("W/{tag}")), &tag));
        assert!(!if_range_allows_partial(
            Some("Sat, 01 Jan 2000 00:00:00 GMT"),
            &tag
        ));
        assert!(!if_range_allows_partial(Some("W/\"x\""), "W/\"x\""));
    }

    fn header_safe(v: &str) -> bool {
        v.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
    }

    #[test]
    fn dispositions() {
        for (name, inline, want) in [
            (
                "report.pdf",
                false,
                "attachment; filename=\"report.pdf\"; filename*=UTF-8''report.pdf",
            ),
            (
                "report.pdf",
                true,
                "inline; filename=\"report.pdf\"; filename*=UTF-8''report.pdf",
            ),
            (
                "résumé.pdf",
                false,
                "attachment; filename=\"r_sum_.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf",
            ),
            (
                "a\"b\\c.txt",
                false,
                "attachment; filename=\"a_b_c.txt\"; filename*=UTF-8''a%22b%5Cc.txt",
            ),
            (
                "100%.txt",
                false,
                "attachment; filename=\"100_.txt\"; filename*=UTF-8''100%25.txt",
            ),
            (
                "my file;x=1.txt",
                false,
                "attachment; filename=\"my file;x=1.txt\"; filename*=UTF-8''my%20file%3Bx%3D1.txt",
            ),
            (
                "a\r\nSet-Cookie: x",
                false,
                "attachment; filename=\"a__Set-Cookie: x\"; filename*=UTF-8''a%0D%0ASet-Cookie%3A%20x",
            ),
            (
                "😀.png",
                true,
                "inline; filename=\"_.png\"; filename*=UTF-8''%F0%9F%98%80.png",
            ),
            (
                "",
                false,
                "attachment; filename=\"download\"; filename*=UTF-8''download",
            ),
            (
                "x!#$&+-.^_`|~y",
                false,
                "attachment; filename=\"x!#$&+-.^_`|~y\"; filename*=UTF-8''x!#$&+-.^_`|~y",
            ),
        ] {
            let got = content_disposition(name, inline);
            assert_eq!(got, want, "{name:?}");
            assert!(header_safe(&got), "{got:?}");
        }
        // Every control character and every code point class stays header-safe.
        let nasty: String = (0u32..0x250)
            .chain([0x2028, 0x202e, 0xfeff, 0x1f600])
            .filter_map(char::from_u32)
            .collect();
        assert!(header_safe(&content_disposition(&nasty, false)));
    }

    #[test]
    fn etags() {
        assert_eq!(etag("abc123", "42"), "\"abc123-42\"");
        assert_eq!(
            etag("0f1e", "018f2c1e-7b3a-7c4d-9e5f-0a1b2c3d4e5f"),
            "\"0f1e-018f2c1e-7b3a-7c4d-9e5f-0a1b2c3d4e5f\""
        );
        assert_eq!(etag("ab\"c d\r\n", "1/2"), "\"abcd-12\"");
        assert_ne!(etag("abc", "1"), etag("abc", "2"));
        let t = etag("ff", "7");
        assert!(t.starts_with('"') && t.ends_with('"') && header_safe(&t));
    }

    #[test]
    fn if_none_match() {
        let tag = etag("abc", "1");
        for (header, hit) in [
            (None, false),
            (Some(""), false),
            (Some("*"), true),
            (Some(" * "), true),
            (Some("\"abc-1\""), true),
            (Some("W/\"abc-1\""), true),
            (Some("\"x\", \"abc-1\""), true),
            (Some("\"x\",W/\"abc-1\""), true),
            (Some("\"x\" , \"y\""), false),
            (Some("\"abc-2\""), false),
            (Some("abc-1"), false),
            (Some("\"abc-1"), false),
            (Some("\"x\", abc-1"), false),
            (Some("\"ABC-1\""), false),
            (Some("\"abc-1\"x"), true),
        ] {
            assert_eq!(if_none_match_hits(header, &tag), hit, "{header:?}");
        }
        // The stored tag may itself be weak, and tags may hold commas.
        assert!(if_none_match_hits(Some("\"v\""), "W/\"v\""));
        assert!(if_none_match_hits(Some("\"a,b\""), "\"a,b\""));
        assert!(!if_none_match_hits(Some("\"a\", \"b\""), "\"a,b\""));
    }

    #[test]
    fn inline_types() {
        for mime in [
            "image/png",
            "IMAGE/PNG",
            "image/jpeg; foo=bar",
            "image/gif",
            "image/webp",
            "application/pdf",
            "video/mp4",
            "audio/mpeg",
        ] {
            assert!(serve_inline(mime), "{mime}");
        }
        for mime in [
            "text/html",
            "TEXT/HTML; charset=utf-8",
            "application/xhtml+xml",
            "image/svg+xml",
            "application/xml",
            "text/xml",
            "text/javascript",
            "application/javascript",
            "text/plain",
            "text/css",
            "application/json",
            "application/octet-stream",
            "multipart/x-mixed-replace",
            "",
            "image/png/../html",
        ] {
            assert!(!serve_inline(mime), "{mime}");
        }
        // Whatever the table guesses, nothing scriptable goes inline.
        for (_, mime) in MIME_TYPES {
            let scriptable = ["html", "xml", "svg", "javascript", "text/"]
                .iter()
                .any(|k| mime.contains(k));
            if scriptable {
                assert!(!serve_inline(mime), "{mime}");
            }
        }
    }
}
