//! Paths inside a source: what can be named, and so what cannot (nothing outside the root).

use std::fmt;

use crate::SourceError;

/// A path inside a source: '/'-separated, relative to the source's root, no leading '/', no
/// "." or ".." segment, no empty segment, no control character; "" is the root.
/// [`RemotePath::parse`] refuses the rest, so a `RemotePath` never leads out of the root.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RemotePath(String);

/// Whether `s` can be one segment of a path (a file or folder name).
pub(crate) fn valid_segment(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains('/') && !s.chars().any(|c| c.is_control())
}

impl RemotePath {
    /// The source's root.
    pub fn root() -> RemotePath {
        RemotePath(String::new())
    }

    pub fn parse(s: &str) -> Result<RemotePath, SourceError> {
        if s.is_empty() || s.split('/').all(valid_segment) {
            Ok(RemotePath(s.to_owned()))
        } else {
            Err(SourceError::InvalidPath)
        }
    }

    /// The path of `name` inside this folder; `name` must be one segment.
    pub fn join(&self, name: &str) -> Result<RemotePath, SourceError> {
        if !valid_segment(name) {
            return Err(SourceError::InvalidPath);
        }
        Ok(if self.0.is_empty() {
            RemotePath(name.to_owned())
        } else {
            RemotePath(format!("{}/{name}", self.0))
        })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The segments, none for the root.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|s| !s.is_empty())
    }

    /// The last segment ("" for the root).
    pub fn name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or("")
    }

    /// The folder holding this path; `None` for the root.
    pub fn parent(&self) -> Option<RemotePath> {
        if self.0.is_empty() {
            return None;
        }
        Some(match self.0.rfind('/') {
            Some(i) => RemotePath(self.0[..i].to_owned()),
            None => RemotePath::root(),
        })
    }
}

impl fmt::Display for RemotePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_plain_paths_and_the_root() {
        for ok in ["", "a", "a/b", "a b/ç.txt", ".hidden", "a/..b", "x\\y"] {
            assert_eq!(RemotePath::parse(ok).unwrap().as_str(), ok);
        }
    }

    #[test]
    fn parse_refuses_what_could_leave_or_confuse() {
        for bad in [
            "/", "/a", "a/", "a//b", ".", "..", "a/../b", "a/./b", "../a", "a\nb", "a\0b",
        ] {
            assert_eq!(
                RemotePath::parse(bad),
                Err(SourceError::InvalidPath),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn join_parent_and_name() {
        let root = RemotePath::root();
        assert!(root.is_root());
        assert_eq!(root.parent(), None);
        assert_eq!(root.name(), "");
        let a = root.join("a").unwrap();
        let b = a.join("b.txt").unwrap();
        assert_eq!(b.as_str(), "a/b.txt");
        assert_eq!(b.name(), "b.txt");
        assert_eq!(b.parent(), Some(a.clone()));
        assert_eq!(a.parent(), Some(root.clone()));
        assert_eq!(b.segments().collect::<Vec<_>>(), ["a", "b.txt"]);
        assert_eq!(root.segments().count(), 0);
        for bad in ["", ".", "..", "a/b"] {
            assert_eq!(a.join(bad), Err(SourceError::InvalidPath), "{bad:?}");
        }
    }
}
