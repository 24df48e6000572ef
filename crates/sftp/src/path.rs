//! Paths as an SFTP client sends them, read into the names of the user's view.
//!
//! Every path is taken inside the view: a relative path from its root, an absolute one from the
//! same root, `.` and empty names dropped, and `..` climbing at most to the root, so no path
//! can name anything outside what the user sees. What a name may hold is the content core's
//! rule, checked where a name is made.

/// The names of a path below the view's root.
pub fn clean(path: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                names.pop();
            }
            name => names.push(name.to_string()),
        }
    }
    names
}

/// The absolute path of names, as `realpath` answers it.
pub fn absolute(names: &[String]) -> String {
    if names.is_empty() {
        "/".to_string()
    } else {
        format!("/{}", names.join("/"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_view() {
        assert!(clean("").is_empty());
        assert!(clean("/").is_empty());
        assert!(clean("../../etc/passwd").len() == 2);
        assert_eq!(clean("/../../etc/passwd"), vec!["etc", "passwd"]);
        assert_eq!(clean("My Folder/./a/../b//c"), vec!["My Folder", "b", "c"]);
        assert_eq!(absolute(&clean("a/b/..")), "/a");
        assert_eq!(absolute(&clean("..")), "/");
    }
}
