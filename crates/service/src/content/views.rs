//! The content records clients read, with the reference's field names.

use crate::platform::views::Link;
use crate::rfc3339;
use coffer_domain::content::{self as rules, Access};
use coffer_store::models::{Comment, FileVersion, Object, Upload};
use serde::Serialize;
use utoipa::ToSchema;

/// A role as `GET /rest/roles` and `currentUserRole` show it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoleView {
    pub id: i64,
    pub name: String,
    pub rank: i64,
    /// `d` (folder roles) or `f` (file roles).
    #[serde(rename = "type")]
    pub kind: String,
}

impl RoleView {
    pub fn of(def: &rules::RoleDef) -> RoleView {
        RoleView {
            id: def.id,
            name: def.name.to_string(),
            rank: def.rank,
            kind: match def.kind {
                rules::ObjectKind::Folder => "d".into(),
                rules::ObjectKind::File => "f".into(),
            },
        }
    }

    /// The role an access amounts to; the owner shows as the highest folder role.
    pub fn of_access(a: Access) -> Option<RoleView> {
        let id = match a {
            Access::Owner => 1,
            Access::Role(id) => id,
        };
        rules::role(id).map(RoleView::of)
    }
}

/// A fingerprint of a version's content.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Fingerprint {
    pub algo: String,
    pub hash: String,
}

pub fn fingerprints(sha3: &str, md5: &str) -> Vec<Fingerprint> {
    vec![
        Fingerprint {
            algo: "sha3-256".into(),
            hash: sha3.to_string(),
        },
        Fingerprint {
            algo: "md5".into(),
            hash: md5.to_string(),
        },
    ]
}

/// A folder (`Folder` in the reference).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FolderView {
    pub id: String,
    /// The parent folder; absent for a user's root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub name: String,
    /// Always `d`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The owner of the tree.
    pub user_id: String,
    pub created: String,
    pub modified: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expire: Option<String>,
    pub deleted: bool,
    pub perm_deleted: bool,
    pub secure: bool,
    pub syncable: bool,
    pub file_lifetime: i64,
    pub description: String,
    pub is_shared: bool,
    /// Whether the caller marked it a favorite.
    pub is_favorite: bool,
    pub av_status: String,
    pub dlp_status: String,
    pub is_root: bool,
    pub size: i64,
    pub path: String,
    /// The ids along `path` (in listings only when asked: `with=pathIds`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_ids: Option<String>,
    pub permalink: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_user_role: Option<RoleView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_files_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_folders_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_members_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

/// A file (`File` in the reference).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileView {
    pub id: String,
    pub parent_id: String,
    pub name: String,
    /// Always `f`.
    #[serde(rename = "type")]
    pub kind: String,
    pub user_id: String,
    pub created: String,
    pub modified: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expire: Option<String>,
    pub deleted: bool,
    pub perm_deleted: bool,
    pub secure: bool,
    pub size: i64,
    pub mime: String,
    /// The SHA3-256 of the current version (hex).
    pub fingerprint: String,
    pub fingerprints: Vec<Fingerprint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_modified: Option<String>,
    /// `allowed`, `scanning` or `disallowed`.
    pub av_status: String,
    pub dlp_status: String,
    pub locked: bool,
    pub is_shared: bool,
    /// Whether the caller marked it a favorite.
    pub is_favorite: bool,
    pub versions_count: i64,
    pub path: String,
    /// The ids along `path` (in listings only when asked: `with=pathIds`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_ids: Option<String>,
    pub permalink: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_user_role: Option<RoleView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

/// A version of a file (`Version`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionView {
    pub id: String,
    pub version_number: i64,
    pub deleted: bool,
    pub created: String,
    pub user_id: String,
    pub size: i64,
    pub fingerprint: String,
    pub fingerprint_algo: String,
    /// The content's hashes as plain strings, SHA3-256 then MD5 (a version's are strings where
    /// a file's name their algorithm).
    pub fingerprints: Vec<String>,
    pub mime: String,
    pub name: String,
    pub object_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_modified: Option<String>,
    pub av_status: String,
    pub dlp_status: String,
    pub storage_available: bool,
}

impl VersionView {
    pub fn of(v: &FileVersion, md5: &str) -> VersionView {
        VersionView {
            id: v.id.clone(),
            version_number: v.number,
            deleted: v.deleted,
            created: rfc3339(v.created_at),
            user_id: v.creator_id.clone(),
            size: v.size,
            fingerprint: v.blob_id.clone(),
            fingerprint_algo: "sha3-256".into(),
            fingerprints: vec![v.blob_id.clone(), md5.to_string()],
            mime: v.mime.clone(),
            name: v.name.clone(),
            object_id: v.file_id.clone(),
            client_created: v.client_created_at.map(rfc3339),
            client_modified: v.client_modified_at.map(rfc3339),
            av_status: v.av_status.clone(),
            dlp_status: "allowed".into(),
            storage_available: true,
        }
    }
}

/// An upload session (`Upload`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadView {
    pub id: i64,
    pub user_id: String,
    pub timestamp: String,
    pub last_timestamp: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_chunks: Option<i64>,
    pub client_name: String,
    pub uploaded_size: i64,
    pub uploaded_chunks: i64,
    /// `rest/uploads/{id}`: where the chunks go, relative to the server.
    pub uri: String,
    /// The same, as a full URL.
    pub upload_url: String,
    /// The node that opened the session (any node takes the chunks).
    pub location: String,
    pub finished: bool,
    pub complete_ok: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replace_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_modified: Option<String>,
    /// When the session expires unless a chunk arrives.
    pub expire: String,
}

impl UploadView {
    pub fn of(u: &Upload, base_url: &str, node: &str) -> UploadView {
        UploadView {
            id: u.id,
            user_id: u.user_id.clone(),
            timestamp: rfc3339(u.created_at),
            last_timestamp: rfc3339(u.updated_at),
            total_size: u.total_size,
            total_chunks: u.total_chunks,
            client_name: u.filename.clone(),
            uploaded_size: u.uploaded_size,
            uploaded_chunks: u.uploaded_chunks,
            uri: format!("rest/uploads/{}", u.id),
            upload_url: format!("{base_url}/rest/uploads/{}", u.id),
            location: node.to_string(),
            finished: u.result_file_id.is_some(),
            complete_ok: i64::from(u.result_file_id.is_some()),
            replace_id: u.file_id.clone(),
            file_url: u
                .result_file_id
                .as_ref()
                .map(|f| format!("{base_url}/rest/files/{f}")),
            client_created: u.client_created_at.map(rfc3339),
            client_modified: u.client_modified_at.map(rfc3339),
            expire: rfc3339(u.expires_at),
        }
    }
}

/// The upload limits (`AcfsConfig`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadConfig {
    pub active: i64,
    pub upload_chunk_max: i64,
    pub upload_timeout: i64,
    /// The largest file accepted (Coffer's addition).
    pub max_upload_size: i64,
    pub message: String,
}

/// A comment on a file (`Comment`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommentView {
    pub id: i64,
    /// 0 for a comment that answers none.
    pub parent_id: i64,
    pub object_id: String,
    pub folder_id: String,
    pub user_id: String,
    pub created: String,
    pub modified: String,
    pub contents: String,
    pub deleted: bool,
    pub is_comment: bool,
}

impl CommentView {
    pub fn of(c: &Comment, folder_id: &str) -> CommentView {
        CommentView {
            id: c.id,
            parent_id: c.parent_id.unwrap_or(0),
            object_id: c.object_id.clone(),
            folder_id: folder_id.to_string(),
            user_id: c.user_id.clone(),
            created: rfc3339(c.created_at),
            modified: rfc3339(c.modified_at),
            contents: c.contents.clone(),
            deleted: c.deleted,
            is_comment: true,
        }
    }
}

/// A member of a folder (`Member`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    pub object_id: String,
    pub role_id: i64,
    pub user_id: String,
    pub email: String,
    pub rank: i64,
    pub created: String,
    pub role: RoleView,
    /// The folder the membership was given on, when it is inherited from above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inherit_role_id: Option<i64>,
}

/// One step of a path (`FilePathResponse.data`, `FolderTreeItem`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PathItem {
    pub id: String,
    pub name: String,
}

/// The names (or ids) of a path, joined.
fn join(path: &[(String, String)], part: fn(&(String, String)) -> &String, sep: &str) -> String {
    path.iter()
        .map(|p| part(p).as_str())
        .collect::<Vec<_>>()
        .join(sep)
}

pub(crate) fn folder_view(
    o: &Object,
    access: Option<Access>,
    path: &[(String, String)],
    shared: bool,
    base_url: &str,
) -> FolderView {
    FolderView {
        id: o.id.clone(),
        parent_id: o.parent_id.clone(),
        name: o.name.clone(),
        kind: "d".into(),
        user_id: o.owner_id.clone(),
        created: rfc3339(o.created_at),
        modified: rfc3339(o.modified_at),
        expire: o.expire_at.map(rfc3339),
        deleted: o.deleted_at.is_some(),
        perm_deleted: o.perm_deleted,
        secure: o.secure,
        syncable: o.syncable,
        file_lifetime: o.file_lifetime,
        description: o.description.clone(),
        is_shared: shared,
        is_favorite: false,
        av_status: "allowed".into(),
        dlp_status: "allowed".into(),
        is_root: o.system.as_deref() == Some("base"),
        size: o.size,
        path: join(path, |(_, n)| n, "/"),
        path_ids: Some(join(path, |(i, _)| i, ",")),
        permalink: format!("{base_url}/#/folder/{}", o.id),
        current_user_role: access.and_then(RoleView::of_access),
        total_files_count: None,
        total_folders_count: None,
        total_members_count: None,
        links: None,
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn file_view(
    o: &Object,
    current: Option<&FileVersion>,
    md5: &str,
    versions: i64,
    access: Option<Access>,
    path: &[(String, String)],
    shared: bool,
    base_url: &str,
) -> FileView {
    let sha3 = current.map(|v| v.blob_id.clone()).unwrap_or_default();
    FileView {
        id: o.id.clone(),
        parent_id: o.parent_id.clone().unwrap_or_default(),
        name: o.name.clone(),
        kind: "f".into(),
        user_id: o.owner_id.clone(),
        created: rfc3339(o.created_at),
        modified: rfc3339(o.modified_at),
        expire: o.expire_at.map(rfc3339),
        deleted: o.deleted_at.is_some(),
        perm_deleted: o.perm_deleted,
        secure: o.secure,
        size: o.size,
        mime: o
            .mime
            .clone()
            .unwrap_or_else(|| "application/octet-stream".into()),
        fingerprints: fingerprints(&sha3, md5),
        fingerprint: sha3,
        client_created: o.client_created_at.map(rfc3339),
        client_modified: o.client_modified_at.map(rfc3339),
        av_status: current
            .map(|v| v.av_status.clone())
            .unwrap_or_else(|| "allowed".into()),
        dlp_status: "allowed".into(),
        locked: false,
        is_shared: shared,
        is_favorite: false,
        versions_count: versions,
        path: join(path, |(_, n)| n, "/"),
        path_ids: Some(join(path, |(i, _)| i, ",")),
        permalink: format!("{base_url}/#/file/{}", o.id),
        current_user_role: access.and_then(RoleView::of_access),
        links: None,
    }
}

/// The preview of a file's current version (`Preview`). Its address and format are filled in
/// once it is `preview`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewView {
    pub file_id: String,
    pub version_id: String,
    /// `processing` (not made yet), `preview` (it can be shown) or `failed` (the type has none).
    pub status: String,
    /// `image` (a PNG thumbnail), `pdf` (a PDF made by the converter) or `native` (the file
    /// itself, a type browsers show safely).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The MIME type of what `link` serves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// Whether the preview is the file itself rather than something made from it.
    pub native: bool,
    /// Where the preview is read (shown in place, in a sandbox).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// The same address, for clients that open a viewer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view_url: Option<String>,
    /// The address again when the preview is a PDF.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pdf: Option<String>,
    /// The same address under Coffer's earlier name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_url: Option<String>,
}
