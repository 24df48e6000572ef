//! The server-directory connector on a temporary directory: listing, metadata, ranges, writes
//! that replace or refuse, folders, deletes, the read-only refusal, and nothing outside the root
//! (paths with `..` never parse; symlinks leading out are refused, those inside followed).

use std::fs;
use std::io::Read;
use std::path::Path;

use coffer_sources::{directory, Connector, RemotePath, SourceError};

fn p(s: &str) -> RemotePath {
    RemotePath::parse(s).unwrap()
}

fn read_all(c: &dyn Connector, path: &str, range: Option<(u64, Option<u64>)>) -> Vec<u8> {
    let mut d = c.read(&p(path), range).unwrap();
    let mut out = Vec::new();
    d.body.read_to_end(&mut out).unwrap();
    assert_eq!(d.length, Some(out.len() as u64), "{path} {range:?}");
    out
}

/// A tree: `a.txt`, `b/` with `b/c.bin`, `empty/`.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.txt"), b"hello world").unwrap();
    fs::create_dir(dir.path().join("b")).unwrap();
    fs::write(dir.path().join("b/c.bin"), (0u8..=255).collect::<Vec<_>>()).unwrap();
    fs::create_dir(dir.path().join("empty")).unwrap();
    dir
}

#[test]
fn lists_and_stats_sorted_with_metadata() {
    let dir = tree();
    let c = directory(dir.path(), false).unwrap();
    c.check().unwrap();
    let root = c.list(&RemotePath::root()).unwrap();
    let names: Vec<_> = root.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["a.txt", "b", "empty"]);
    let a = &root[0];
    assert_eq!(a.path, p("a.txt"));
    assert!(!a.is_dir);
    assert_eq!(a.size, Some(11));
    assert_eq!(a.mime.as_deref(), Some("text/plain"));
    assert!(a.modified.is_some() && a.etag.is_some());
    assert!(root[1].is_dir && root[1].size.is_none() && root[1].mime.is_none());
    let inner = c.list(&p("b")).unwrap();
    assert_eq!(inner.len(), 1);
    assert_eq!(inner[0].path, p("b/c.bin"));
    assert_eq!(inner[0].size, Some(256));
    assert!(c.list(&p("empty")).unwrap().is_empty());
    let s = c.stat(&p("b/c.bin")).unwrap();
    assert_eq!((s.name.as_str(), s.size), ("c.bin", Some(256)));
    assert!(c.stat(&RemotePath::root()).unwrap().is_dir);
    // A file's etag changes with its content.
    let before = c.stat(&p("a.txt")).unwrap().etag;
    fs::write(dir.path().join("a.txt"), b"hello world, again").unwrap();
    assert_ne!(c.stat(&p("a.txt")).unwrap().etag, before);
}

#[test]
fn missing_paths_are_not_found() {
    let dir = tree();
    let c = directory(dir.path(), true).unwrap();
    for path in ["nope", "b/nope", "a.txt/x"] {
        assert_eq!(
            c.stat(&p(path)).err(),
            Some(SourceError::NotFound),
            "{path}"
        );
        assert_eq!(
            c.list(&p(path)).err(),
            Some(SourceError::NotFound),
            "{path}"
        );
        assert_eq!(c.read(&p(path), None).err(), Some(SourceError::NotFound));
    }
    // A file is not a folder to list, nor a folder a file to read.
    assert_eq!(c.list(&p("a.txt")).err(), Some(SourceError::NotFound));
    assert_eq!(c.read(&p("b"), None).err(), Some(SourceError::NotFound));
    assert_eq!(c.delete(&p("nope")).err(), Some(SourceError::NotFound));
    assert!(directory(&dir.path().join("nope"), false).is_err());
}

#[test]
fn reads_whole_files_and_ranges() {
    let dir = tree();
    let c = directory(dir.path(), false).unwrap();
    let all: Vec<u8> = (0u8..=255).collect();
    assert_eq!(read_all(&*c, "b/c.bin", None), all);
    assert_eq!(read_all(&*c, "b/c.bin", Some((10, Some(19)))), &all[10..20]);
    assert_eq!(read_all(&*c, "b/c.bin", Some((250, None))), &all[250..]);
    // The end is clamped to the file.
    assert_eq!(
        read_all(&*c, "b/c.bin", Some((200, Some(9999)))),
        &all[200..]
    );
    let d = c.read(&p("b/c.bin"), Some((3, Some(3)))).unwrap();
    assert_eq!((d.range, d.length), (Some((3, 3)), Some(1)));
    assert_eq!(c.read(&p("b/c.bin"), None).unwrap().range, None);
    for bad in [(256, None), (300, Some(400)), (20, Some(10))] {
        assert_eq!(
            c.read(&p("b/c.bin"), Some(bad)).err(),
            Some(SourceError::RangeNotSatisfiable),
            "{bad:?}"
        );
    }
}

#[test]
fn writes_replace_or_refuse_and_leave_no_temporary_file() {
    let dir = tree();
    let c = directory(dir.path(), true).unwrap();
    assert!(c.writable());
    let data = vec![7u8; 300_000];
    let e = c
        .write(
            &p("b"),
            "new.bin",
            &mut &data[..],
            Some(data.len() as u64),
            false,
        )
        .unwrap();
    assert_eq!((e.path.as_str(), e.size), ("b/new.bin", Some(300_000)));
    assert_eq!(fs::read(dir.path().join("b/new.bin")).unwrap(), data);
    // Unknown length.
    c.write(
        &RemotePath::root(),
        "s.txt",
        &mut &b"streamed"[..],
        None,
        false,
    )
    .unwrap();
    assert_eq!(fs::read(dir.path().join("s.txt")).unwrap(), b"streamed");
    // Not replaced unless asked; a folder is never replaced by a file.
    assert_eq!(
        c.write(&RemotePath::root(), "a.txt", &mut &b"x"[..], Some(1), false)
            .err(),
        Some(SourceError::Exists)
    );
    assert_eq!(fs::read(dir.path().join("a.txt")).unwrap(), b"hello world");
    c.write(
        &RemotePath::root(),
        "a.txt",
        &mut &b"replaced"[..],
        Some(8),
        true,
    )
    .unwrap();
    assert_eq!(fs::read(dir.path().join("a.txt")).unwrap(), b"replaced");
    assert_eq!(
        c.write(&RemotePath::root(), "b", &mut &b"x"[..], Some(1), true)
            .err(),
        Some(SourceError::Exists)
    );
    // A body longer or shorter than announced is refused and leaves nothing behind.
    assert_eq!(
        c.write(
            &RemotePath::root(),
            "long",
            &mut &b"12345"[..],
            Some(3),
            false
        )
        .err(),
        Some(SourceError::TooLarge)
    );
    assert!(matches!(
        c.write(
            &RemotePath::root(),
            "short",
            &mut &b"12"[..],
            Some(3),
            false
        ),
        Err(SourceError::Remote(_))
    ));
    assert!(!dir.path().join("long").exists() && !dir.path().join("short").exists());
    // Into a missing folder, or with a name that is not one segment.
    assert_eq!(
        c.write(&p("nope"), "x", &mut &b"x"[..], Some(1), false)
            .err(),
        Some(SourceError::NotFound)
    );
    for bad in ["", ".", "..", "a/b"] {
        assert_eq!(
            c.write(&RemotePath::root(), bad, &mut &b"x"[..], Some(1), false)
                .err(),
            Some(SourceError::InvalidPath),
            "{bad:?}"
        );
    }
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".coffer-upload")),
        "{names:?}"
    );
}

#[test]
fn makes_and_deletes_folders_and_files() {
    let dir = tree();
    let c = directory(dir.path(), true).unwrap();
    let e = c.make_dir(&p("b"), "d").unwrap();
    assert!(e.is_dir && e.path == p("b/d"));
    assert!(dir.path().join("b/d").is_dir());
    assert_eq!(c.make_dir(&p("b"), "d").err(), Some(SourceError::Exists));
    assert_eq!(
        c.make_dir(&p("b"), "c.bin").err(),
        Some(SourceError::Exists)
    );
    assert_eq!(
        c.make_dir(&p("nope"), "d").err(),
        Some(SourceError::NotFound)
    );
    c.delete(&p("a.txt")).unwrap();
    assert!(!dir.path().join("a.txt").exists());
    // A folder goes with everything in it.
    c.delete(&p("b")).unwrap();
    assert!(!dir.path().join("b").exists());
    assert_eq!(
        c.delete(&RemotePath::root()).err(),
        Some(SourceError::Forbidden)
    );
    assert!(dir.path().exists());
}

#[test]
fn a_read_only_source_refuses_every_write() {
    let dir = tree();
    let c = directory(dir.path(), false).unwrap();
    assert!(!c.writable());
    let root = RemotePath::root();
    assert_eq!(
        c.write(&root, "n.txt", &mut &b"x"[..], Some(1), false)
            .err(),
        Some(SourceError::Forbidden)
    );
    assert_eq!(c.make_dir(&root, "d").err(), Some(SourceError::Forbidden));
    assert_eq!(c.delete(&p("a.txt")).err(), Some(SourceError::Forbidden));
    assert!(!dir.path().join("n.txt").exists() && !dir.path().join("d").exists());
    assert!(dir.path().join("a.txt").exists());
    // No remote locks here.
    assert_eq!(c.lock(&p("a.txt"), "ann").unwrap(), None);
    c.unlock(&p("a.txt"), "t").unwrap();
}

#[test]
fn dot_dot_never_becomes_a_path() {
    for bad in ["..", "../x", "b/../../x", "/etc/passwd", "b/./c.bin"] {
        assert_eq!(
            RemotePath::parse(bad),
            Err(SourceError::InvalidPath),
            "{bad}"
        );
    }
}

#[cfg(unix)]
#[test]
fn symlinks_inside_are_followed_and_those_leading_out_refused() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), b"secret").unwrap();
    let dir = tree();
    let root = dir.path();
    symlink(outside.path().join("secret.txt"), root.join("out-file")).unwrap();
    symlink(outside.path(), root.join("out-dir")).unwrap();
    symlink(root.join("b"), root.join("in-dir")).unwrap();
    symlink("a.txt", root.join("in-file")).unwrap();
    symlink(root.join("gone"), root.join("dangling")).unwrap();
    let c = directory(root, true).unwrap();

    for path in ["out-file", "out-dir", "out-dir/secret.txt"] {
        assert_eq!(
            c.stat(&p(path)).err(),
            Some(SourceError::Forbidden),
            "{path}"
        );
        assert_eq!(c.read(&p(path), None).err(), Some(SourceError::Forbidden));
    }
    assert_eq!(c.list(&p("out-dir")).err(), Some(SourceError::Forbidden));
    assert_eq!(
        c.write(&p("out-dir"), "x", &mut &b"x"[..], Some(1), false)
            .err(),
        Some(SourceError::Forbidden)
    );
    assert_eq!(
        c.write(
            &RemotePath::root(),
            "out-file",
            &mut &b"x"[..],
            Some(1),
            true
        )
        .err(),
        Some(SourceError::Forbidden)
    );
    assert_eq!(
        c.make_dir(&p("out-dir"), "x").err(),
        Some(SourceError::Forbidden)
    );
    assert_eq!(
        fs::read(outside.path().join("secret.txt")).unwrap(),
        b"secret"
    );
    assert!(!outside.path().join("x").exists());

    // Inside: followed.
    assert_eq!(read_all(&*c, "in-file", None), b"hello world");
    assert_eq!(c.list(&p("in-dir")).unwrap()[0].name, "c.bin");
    // Listings leave out what leads out and what dangles.
    let names: Vec<String> = c
        .list(&RemotePath::root())
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["a.txt", "b", "empty", "in-dir", "in-file"]);
    // Deleting a link removes the link, never its target.
    c.delete(&p("out-dir")).unwrap();
    assert!(outside.path().join("secret.txt").exists());
    assert!(!root.join("out-dir").exists());
}

#[test]
fn a_root_given_through_a_symlink_is_its_target() {
    let dir = tree();
    let link_parent = tempfile::tempdir().unwrap();
    let link = link_parent.path().join("link");
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.path(), &link).unwrap();
    #[cfg(not(unix))]
    let link = dir.path().to_path_buf();
    let c = directory(Path::new(&link), false).unwrap();
    assert_eq!(read_all(&*c, "a.txt", None), b"hello world");
}
