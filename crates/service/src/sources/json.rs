//! A listing of source entries written as JSON by hand, into one buffer sized for it: the same
//! bytes `serde_json` writes for [`SourceContentView`] in the `{data, metadata}` envelope, for
//! less. A page of a thousand records is tens of thousands of strings, most of which (ids in
//! base64url, times, the fixed words) never need escaping; `serde_json` looks at every byte of
//! each to escape it. Here a string goes out as it is when no byte of it needs escaping, and
//! through `serde_json`'s own escaping when one does, so the output stays byte for byte what
//! `serde_json::to_vec` gives (the tests compare them).

use super::browse::SourceContentView;
use crate::platform::views::{Link, Listed};

/// Whether `s` is written as it is inside a JSON string: no `"`, `\` or control character
/// (below U+0020; serde_json escapes nothing else).
fn plain(s: &str) -> bool {
    s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\')
}

/// `s` as a JSON string.
fn string(out: &mut Vec<u8>, s: &str) {
    if plain(s) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing a `str` into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

fn key(out: &mut Vec<u8>, first: &mut bool, name: &str) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
}

fn integer(out: &mut Vec<u8>, v: i64) {
    use std::io::Write as _;
    // Writing into a `Vec` cannot fail.
    let _ = write!(out, "{v}");
}

fn boolean(out: &mut Vec<u8>, v: bool) {
    out.extend_from_slice(if v { b"true" } else { b"false" });
}

/// `"name":"v"` when `v` is present.
fn optional_string(out: &mut Vec<u8>, first: &mut bool, name: &str, v: Option<&str>) {
    if let Some(v) = v {
        key(out, first, name);
        string(out, v);
    }
}

/// `"name":v` when `v` is present.
fn optional_boolean(out: &mut Vec<u8>, first: &mut bool, name: &str, v: Option<bool>) {
    if let Some(v) = v {
        key(out, first, name);
        boolean(out, v);
    }
}

fn links(out: &mut Vec<u8>, links: &[Link]) {
    out.push(b'[');
    for (i, l) in links.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"rel\":");
        string(out, &l.rel);
        out.extend_from_slice(b",\"href\":");
        string(out, &l.href);
        out.push(b'}');
    }
    out.push(b']');
}

impl SourceContentView {
    /// Appends this record as `serde_json` writes it (its fields in their order, the ones
    /// `None` left out).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let mut first = true;
        let f = &mut first;
        out.push(b'{');
        key(out, f, "id");
        string(out, &self.id);
        key(out, f, "name");
        string(out, &self.name);
        key(out, f, "parentId");
        string(out, &self.parent_id);
        key(out, f, "type");
        string(out, &self.kind);
        optional_string(out, f, "created", self.created.as_deref());
        optional_string(out, f, "modified", self.modified.as_deref());
        key(out, f, "status");
        string(out, &self.status);
        key(out, f, "deleted");
        boolean(out, self.deleted);
        key(out, f, "path");
        string(out, &self.path);
        key(out, f, "wopiapp");
        boolean(out, self.wopiapp);
        optional_string(out, f, "rootId", self.root_id.as_deref());
        optional_string(out, f, "pathIds", self.path_ids.as_deref());
        optional_string(out, f, "sourceTypeId", self.source_type_id.as_deref());
        if let Some(v) = &self.parent {
            key(out, f, "parent");
            v.write_json(out);
        }
        optional_boolean(out, f, "locked", self.locked);
        optional_string(out, f, "lockedUserName", self.locked_user_name.as_deref());
        if let Some(v) = self.size {
            key(out, f, "size");
            integer(out, v);
        }
        optional_string(out, f, "mime", self.mime.as_deref());
        optional_string(out, f, "avStatus", self.av_status.as_deref());
        optional_string(out, f, "dlpStatus", self.dlp_status.as_deref());
        optional_boolean(out, f, "isFavorite", self.is_favorite);
        if let Some(v) = &self.links {
            key(out, f, "links");
            links(out, v);
        }
        out.push(b'}');
    }
}

/// A page of records in the `{data, metadata: {total, limit, offset}}` envelope, as
/// `serde_json` writes it.
pub fn listing(l: &Listed<SourceContentView>) -> Vec<u8> {
    // About 400 bytes a record without `with` fields: one allocation for most pages.
    let mut out = Vec::with_capacity(64 + l.items.len() * 512);
    out.extend_from_slice(b"{\"data\":[");
    for (i, v) in l.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        v.write_json(&mut out);
    }
    out.extend_from_slice(b"],\"metadata\":{\"total\":");
    integer(&mut out, l.total);
    out.extend_from_slice(b",\"limit\":");
    integer(&mut out, l.limit);
    out.extend_from_slice(b",\"offset\":");
    integer(&mut out, l.offset);
    out.extend_from_slice(b"}}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(name: &str) -> SourceContentView {
        SourceContentView {
            id: "YWJjOmEvYiBjLnR4dA".into(),
            name: name.into(),
            parent_id: "abc".into(),
            kind: "f".into(),
            created: Some("2026-11-27T20:00:00Z".into()),
            modified: None,
            status: "available".into(),
            deleted: false,
            path: format!("/a/{name}"),
            wopiapp: false,
            root_id: None,
            path_ids: None,
            source_type_id: None,
            parent: None,
            locked: Some(false),
            locked_user_name: None,
            size: Some(-7),
            mime: Some("text/plain".into()),
            av_status: Some("allowed".into()),
            dlp_status: Some("allowed".into()),
            is_favorite: None,
            links: None,
        }
    }

    /// Names a listing can hold: quotes, backslashes, every control character, non-ASCII
    /// (two-, three- and four-byte), the line separators JavaScript minds, DEL.
    fn names() -> Vec<String> {
        let mut n: Vec<String> = [
            "plain.txt",
            "",
            "with \"quotes\" and \\backslash\\",
            "tab\there\nnewline\r",
            "\u{7f}del",
            "été ünïcödé",
            "漢字.pdf",
            "emoji 😀.png",
            "sep\u{2028}and\u{2029}",
            "</script>&<>'",
            "\"",
            "\\",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        n.extend((0u8..0x20).map(|c| format!("c{}x", c as char)));
        n
    }

    #[test]
    fn a_record_is_written_as_serde_json_writes_it() {
        for name in names() {
            let v = view(&name);
            let mut out = Vec::new();
            v.write_json(&mut out);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&v).unwrap(),
                "{name:?}"
            );
        }
    }

    #[test]
    fn every_optional_field_is_written_as_serde_json_writes_it() {
        let mut folder = view("dir \"x\"");
        folder.kind = "d".into();
        folder.locked = None;
        folder.size = None;
        folder.mime = None;
        folder.av_status = None;
        folder.dlp_status = None;
        folder.is_favorite = Some(false);
        folder.created = None;
        let mut full = view("f\u{1}.txt");
        full.modified = Some("2026-01-02T03:04:05Z".into());
        full.deleted = true;
        full.wopiapp = true;
        full.root_id = Some("src\"1".into());
        full.path_ids = Some("a,b,c".into());
        full.source_type_id = Some("1".into());
        full.parent = Some(Box::new(folder.clone()));
        full.locked = Some(true);
        full.locked_user_name = Some("ann\u{7}@example.com".into());
        full.size = Some(i64::MAX);
        full.is_favorite = Some(true);
        full.links = Some(vec![
            Link::new("self", "http://h/rest/sources/files/x\"y".into()),
            Link::new("collection", "http://h/rest/sources/files".into()),
        ]);
        let mut empty_links = view("n");
        empty_links.links = Some(Vec::new());
        empty_links.size = Some(i64::MIN);
        for v in [folder, full, empty_links] {
            let mut out = Vec::new();
            v.write_json(&mut out);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&v).unwrap()
            );
        }
    }

    #[test]
    fn a_page_is_written_in_its_envelope_as_serde_json_writes_it() {
        for items in [Vec::new(), names().iter().map(|n| view(n)).collect()] {
            let l = Listed {
                items,
                total: 1234,
                offset: -1,
                limit: 1000,
            };
            let expected = serde_json::json!({
                "data": l.items,
                "metadata": {"total": l.total, "limit": l.limit, "offset": l.offset},
            });
            let ours: serde_json::Value = serde_json::from_slice(&listing(&l)).unwrap();
            assert_eq!(ours, expected);
            // Byte for byte: the envelope's keys in the order the http layer writes them.
            let mut text = String::from("{\"data\":");
            text.push_str(&serde_json::to_string(&l.items).unwrap());
            text.push_str(&format!(
                ",\"metadata\":{{\"total\":{},\"limit\":{},\"offset\":{}}}}}",
                l.total, l.limit, l.offset
            ));
            assert_eq!(String::from_utf8(listing(&l)).unwrap(), text);
        }
    }
}
