//! The operator's server directories: the grammar of `COFFER_SOURCE_DIRS`.

use std::collections::HashSet;
use std::path::PathBuf;

/// One server directory exposed as a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirSource {
    /// The name the source is known by (unique in the list).
    pub name: String,
    /// An absolute path on the server.
    pub root: PathBuf,
    /// Writes allowed (`:rw`); read-only otherwise.
    pub writable: bool,
}

/// Parses `COFFER_SOURCE_DIRS`: `name=/path[:rw|:ro][,name=/path[:rw|:ro]...]`. Blank text is no
/// directory; spaces around items, names and paths are ignored. A name is non-empty, without
/// `=` or `,`, and unique; a path is absolute. The error says which item is wrong.
pub fn parse_source_dirs(text: &str) -> Result<Vec<DirSource>, String> {
    let mut out = Vec::new();
    let mut names = HashSet::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            continue;
        }
        let (name, rest) = item
            .split_once('=')
            .ok_or_else(|| format!("`{item}`: expected name=/path[:rw]"))?;
        let name = name.trim();
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(format!("`{item}`: the name is empty or not printable"));
        }
        let rest = rest.trim();
        let (path, writable) = if let Some(p) = rest.strip_suffix(":rw") {
            (p, true)
        } else if let Some(p) = rest.strip_suffix(":ro") {
            (p, false)
        } else {
            (rest, false)
        };
        let root = PathBuf::from(path.trim());
        if !root.is_absolute() {
            return Err(format!("`{item}`: the path must be absolute"));
        }
        if !names.insert(name.to_owned()) {
            return Err(format!("`{item}`: the name {name} is given twice"));
        }
        out.push(DirSource {
            name: name.to_owned(),
            root,
            writable,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_paths_and_modes() {
        let dirs = parse_source_dirs(" shared=/srv/shared:rw , archive = /srv/archive, old=/o:ro ")
            .unwrap();
        assert_eq!(
            dirs,
            vec![
                DirSource {
                    name: "shared".into(),
                    root: "/srv/shared".into(),
                    writable: true
                },
                DirSource {
                    name: "archive".into(),
                    root: "/srv/archive".into(),
                    writable: false
                },
                DirSource {
                    name: "old".into(),
                    root: "/o".into(),
                    writable: false
                },
            ]
        );
        assert_eq!(parse_source_dirs("").unwrap(), vec![]);
        assert_eq!(parse_source_dirs(" , ").unwrap(), vec![]);
    }

    #[test]
    fn refuses_bad_items() {
        for bad in [
            "shared",
            "=/srv",
            "a=relative/path",
            "a=/x,a=/y",
            "a=",
            "a=:rw",
        ] {
            let e = parse_source_dirs(bad).unwrap_err();
            assert!(!e.is_empty(), "{bad}");
        }
    }
}
