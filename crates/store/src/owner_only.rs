//! The SQLite database file and its directory, readable by their owner only. The database holds
//! signing keys of the signature flow and every account's hashes: no other local user may read
//! it. SQLite gives its `-wal` and `-shm` files the mode of the database file, so making that
//! file `0600` before the first connection covers all three.

use crate::{StoreError, StoreResult};
use std::path::Path;

/// Creates the database's directory (`0700`) and file (`0600`) when missing, and takes group
/// and other access away from an existing file that has it (a database made by an older
/// Coffer, or copied in), logging that it did.
pub(crate) fn prepare_sqlite_file(path: &Path) -> StoreResult<()> {
    if path.as_os_str().is_empty() || path.to_str() == Some(":memory:") {
        return Ok(());
    }
    let fail = |what: &str, e: std::io::Error| {
        StoreError::Connection(format!("{what} {}: {e}", path.display()))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder
                .create(dir)
                .map_err(|e| fail("creating the directory of", e))?;
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let mode = std::fs::metadata(path)
                    .map_err(|e| fail("reading", e))?
                    .permissions()
                    .mode();
                if mode & 0o077 != 0 {
                    for file in [
                        path.to_path_buf(),
                        wal_sibling(path, "-wal"),
                        wal_sibling(path, "-shm"),
                    ] {
                        if file.exists() {
                            std::fs::set_permissions(
                                &file,
                                std::fs::Permissions::from_mode(mode & 0o700),
                            )
                            .map_err(|e| fail("restricting", e))?;
                        }
                    }
                    log::warn!(
                        "the database file {} was readable by other users (mode {:o}); it is now \
                         readable by its owner only",
                        path.display(),
                        mode & 0o777
                    );
                }
            }
            Err(e) => return Err(fail("creating", e)),
        }
    }
    Ok(())
}

fn wal_sibling(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    name.into()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_new_database_and_its_directory_are_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("data/sub/coffer.db");
        prepare_sqlite_file(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&tmp.path().join("data/sub")), 0o700);
        assert_eq!(mode(&tmp.path().join("data")), 0o700);
    }

    #[test]
    fn an_existing_readable_database_is_restricted_with_its_wal() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("coffer.db");
        let wal = tmp.path().join("coffer.db-wal");
        for f in [&db, &wal] {
            std::fs::write(f, b"").unwrap();
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        prepare_sqlite_file(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&wal), 0o600);
    }

    #[test]
    fn a_private_database_keeps_its_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("coffer.db");
        std::fs::write(&db, b"").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o400)).unwrap();
        prepare_sqlite_file(&db).unwrap();
        assert_eq!(mode(&db), 0o400);
    }
}
