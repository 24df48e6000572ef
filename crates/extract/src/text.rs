//! The text of documents, for the search index: plain text and source code, HTML (tags and
//! scripts dropped), PDF, the Office Open XML formats (DOCX, XLSX, PPTX) and OpenDocument
//! (ODT, ODS, ODP).
//!
//! Every call is bounded ([`TextLimits`]): the bytes read, the bytes unpacked from an archive
//! (each entry's size is counted as it is inflated, whatever its header claims, so a zip bomb
//! stops at the limit), the number of archive entries and PDF objects looked at, the text kept,
//! and the time (checked between steps against a deadline). Nothing here recurses on the
//! input's structure, so no nesting can exhaust the stack; a panic is caught.
//!
//! The PDF reader is deliberately small: it inflates the content streams (FlateDecode or
//! unfiltered) and reads the strings shown by the text operators (`Tj`, `TJ`, `'`, `"`). That
//! covers the PDFs office software and report generators write with standard fonts; text in
//! fonts with custom encodings (CID fonts without a ToUnicode map) is not recovered. No PDF
//! crate bounds its parser's work and recursion, and a stack overflow cannot be caught.

use crate::{guarded, ExtractError};
use std::io::Read;
use std::time::{Duration, Instant};

/// The bounds of one extraction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextLimits {
    /// The largest file read, in bytes.
    pub max_input_bytes: u64,
    /// The most bytes unpacked from an archive or PDF streams, in all.
    pub max_unpacked_bytes: u64,
    /// The most archive entries or PDF streams looked at.
    pub max_parts: usize,
    /// The most text kept, in bytes (what is beyond is not indexed).
    pub max_text_bytes: usize,
    /// The longest an extraction may work.
    pub max_time: Duration,
}

impl Default for TextLimits {
    /// 64 MiB read, 64 MiB unpacked, 10,000 parts, 256 KiB of text, 20 seconds.
    fn default() -> TextLimits {
        TextLimits {
            max_input_bytes: 64 * 1024 * 1024,
            max_unpacked_bytes: 64 * 1024 * 1024,
            max_parts: 10_000,
            max_text_bytes: 256 * 1024,
            max_time: Duration::from_secs(20),
        }
    }
}

/// The kinds of document whose text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Plain,
    Html,
    Pdf,
    Docx,
    Xlsx,
    Pptx,
    OpenDocument,
}

/// Extensions of plain text and source code.
const PLAIN: &[&str] = &[
    "txt",
    "text",
    "md",
    "markdown",
    "csv",
    "tsv",
    "log",
    "ini",
    "cfg",
    "conf",
    "json",
    "xml",
    "yaml",
    "yml",
    "toml",
    "rs",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "java",
    "kt",
    "py",
    "rb",
    "go",
    "js",
    "ts",
    "jsx",
    "tsx",
    "css",
    "scss",
    "sh",
    "bash",
    "sql",
    "php",
    "pl",
    "swift",
    "cs",
    "scala",
    "r",
    "lua",
    "tex",
    "rst",
    "properties",
    "gradle",
    "vue",
    "svelte",
    "srt",
    "vtt",
];

/// The format whose text is read for a file, from its MIME type and then its name; `None`
/// for files that hold no text Coffer reads (images, audio, video, archives, unknown).
pub fn text_format(mime: &str, name: &str) -> Option<Format> {
    let base = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let by_mime = match base.as_str() {
        "text/html" | "application/xhtml+xml" => Some(Format::Html),
        "application/pdf" => Some(Format::Pdf),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => {
            Some(Format::Docx)
        }
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => Some(Format::Xlsx),
        "application/vnd.openxmlformats-officedocument.presentationml.presentation" => {
            Some(Format::Pptx)
        }
        "application/vnd.oasis.opendocument.text"
        | "application/vnd.oasis.opendocument.spreadsheet"
        | "application/vnd.oasis.opendocument.presentation" => Some(Format::OpenDocument),
        m if m.starts_with("text/") => Some(Format::Plain),
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/x-sh"
        | "application/sql"
        | "application/toml"
        | "application/yaml" => Some(Format::Plain),
        _ => None,
    };
    if by_mime.is_some() {
        return by_mime;
    }
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    match ext.as_str() {
        "html" | "htm" | "xhtml" => Some(Format::Html),
        "pdf" => Some(Format::Pdf),
        "docx" | "docm" => Some(Format::Docx),
        "xlsx" | "xlsm" => Some(Format::Xlsx),
        "pptx" | "pptm" => Some(Format::Pptx),
        "odt" | "ods" | "odp" => Some(Format::OpenDocument),
        e if PLAIN.contains(&e) => Some(Format::Plain),
        _ => None,
    }
}

/// The text of a document in `format`, within `limits`: words separated by single spaces or
/// line breaks, control characters dropped, at most `limits.max_text_bytes` (cut at a
/// character boundary). Bytes that are not what the format says answer
/// [`ExtractError::Corrupt`]; work beyond the limits [`ExtractError::TooLarge`]; a panic
/// [`ExtractError::Panicked`].
pub fn text(bytes: &[u8], format: Format, limits: &TextLimits) -> Result<String, ExtractError> {
    if bytes.len() as u64 > limits.max_input_bytes {
        return Err(ExtractError::TooLarge);
    }
    let mut out = Sink::new(limits.max_text_bytes);
    let budget = Budget {
        deadline: Instant::now() + limits.max_time,
        unpacked: 0,
        max_unpacked: limits.max_unpacked_bytes,
        parts: 0,
        max_parts: limits.max_parts,
    };
    guarded(move || {
        let mut budget = budget;
        match format {
            Format::Plain => plain(bytes, &mut out)?,
            // Markup is rarely more than a few times its text: 32 bytes of HTML per byte of
            // text kept is plenty, and bounds the copies made of it.
            Format::Html => {
                let cut = &bytes[..bytes.len().min(limits.max_text_bytes.saturating_mul(32))];
                html(&String::from_utf8_lossy(cut), &mut out, &mut budget)?
            }
            Format::Pdf => pdf(bytes, &mut out, &mut budget)?,
            Format::Docx => office(bytes, &mut out, &mut budget, |n| {
                n == "word/document.xml"
                    || n.starts_with("word/header")
                    || n.starts_with("word/footer")
                    || n == "word/footnotes.xml"
            })?,
            Format::Xlsx => office(bytes, &mut out, &mut budget, |n| {
                n == "xl/sharedStrings.xml"
                    || (n.starts_with("xl/worksheets/sheet") && n.ends_with(".xml"))
            })?,
            Format::Pptx => office(bytes, &mut out, &mut budget, |n| {
                (n.starts_with("ppt/slides/slide") || n.starts_with("ppt/notesSlides/"))
                    && n.ends_with(".xml")
            })?,
            Format::OpenDocument => office(bytes, &mut out, &mut budget, |n| n == "content.xml")?,
        }
        Ok(out.finish())
    })
}

/// What one extraction may still spend.
struct Budget {
    deadline: Instant,
    unpacked: u64,
    max_unpacked: u64,
    parts: usize,
    max_parts: usize,
}

impl Budget {
    fn tick(&self) -> Result<(), ExtractError> {
        if Instant::now() > self.deadline {
            return Err(ExtractError::TooLarge);
        }
        Ok(())
    }

    fn part(&mut self) -> Result<(), ExtractError> {
        self.parts += 1;
        if self.parts > self.max_parts {
            return Err(ExtractError::TooLarge);
        }
        self.tick()
    }

    /// Room left for unpacked bytes.
    fn room(&self) -> u64 {
        self.max_unpacked.saturating_sub(self.unpacked)
    }
}

/// The text gathered, with whitespace collapsed and a bound on its size. Once full, further
/// text is dropped.
struct Sink {
    text: String,
    max: usize,
    space: bool,
}

impl Sink {
    fn new(max: usize) -> Sink {
        Sink {
            text: String::new(),
            max,
            space: true,
        }
    }

    fn full(&self) -> bool {
        self.text.len() >= self.max
    }

    fn push(&mut self, s: &str) {
        for c in s.chars() {
            if self.full() {
                return;
            }
            if c.is_whitespace() || c.is_control() {
                self.gap();
                continue;
            }
            if self.text.len() + c.len_utf8() > self.max {
                self.text.truncate(self.max.min(self.text.len()));
                self.max = self.text.len();
                return;
            }
            self.text.push(c);
            self.space = false;
        }
    }

    /// A word boundary.
    fn gap(&mut self) {
        if !self.space && !self.full() {
            self.text.push(' ');
            self.space = true;
        }
    }

    fn finish(self) -> String {
        self.text.trim_end().to_string()
    }
}

fn plain(bytes: &[u8], out: &mut Sink) -> Result<(), ExtractError> {
    // NUL bytes in the first 8 KiB mark a binary file (or UTF-16, which Coffer does not read).
    let head = &bytes[..bytes.len().min(8192)];
    if head.contains(&0) {
        return Err(ExtractError::Corrupt("not a text file".into()));
    }
    let n = bytes.len().min(out.max.saturating_mul(2).max(4096));
    out.push(&String::from_utf8_lossy(&bytes[..n]));
    Ok(())
}

/// HTML without its tags, comments, scripts and styles; the common entities decoded.
fn html(s: &str, out: &mut Sink, budget: &mut Budget) -> Result<(), ExtractError> {
    let lower = s.to_ascii_lowercase();
    let mut i = 0;
    let b = s.as_bytes();
    let mut steps = 0u32;
    while i < b.len() && !out.full() {
        steps += 1;
        if steps.is_multiple_of(4096) {
            budget.tick()?;
        }
        if b[i] == b'<' {
            let rest = &lower[i..];
            let end = if rest.starts_with("<!--") {
                rest.find("-->").map(|e| e + 3)
            } else if rest.starts_with("<script") {
                rest.find("</script")
                    .and_then(|e| rest[e..].find('>').map(|g| e + g + 1))
            } else if rest.starts_with("<style") {
                rest.find("</style")
                    .and_then(|e| rest[e..].find('>').map(|g| e + g + 1))
            } else {
                rest.find('>').map(|e| e + 1)
            };
            out.gap();
            match end {
                Some(e) => i += e,
                None => break,
            }
            continue;
        }
        let next = s[i..].find('<').map_or(s.len(), |n| i + n);
        out.push(&entities(&s[i..next]));
        i = next;
    }
    Ok(())
}

fn entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// The text of the XML parts `wanted` names in a zip container (OOXML, OpenDocument). Each
/// entry is inflated through a counting reader, so its real size counts against the budget
/// whatever the archive's headers claim.
fn office(
    bytes: &[u8],
    out: &mut Sink,
    budget: &mut Budget,
    wanted: impl Fn(&str) -> bool,
) -> Result<(), ExtractError> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| ExtractError::Corrupt(format!("not a document archive: {e}")))?;
    if zip.len() > budget.max_parts {
        return Err(ExtractError::TooLarge);
    }
    let mut names: Vec<String> = zip
        .file_names()
        .filter(|n| wanted(n))
        .map(str::to_string)
        .collect();
    if names.is_empty() {
        return Err(ExtractError::Corrupt(
            "the archive holds no document text".into(),
        ));
    }
    // Parts in their natural order (sheet2 before sheet10).
    names.sort_by_key(|n| natural(n));
    for name in names {
        budget.part()?;
        if out.full() {
            break;
        }
        let entry = zip
            .by_name(&name)
            .map_err(|e| ExtractError::Corrupt(format!("a damaged part: {e}")))?;
        let room = budget.room();
        let mut xml = Vec::new();
        entry
            .take(room + 1)
            .read_to_end(&mut xml)
            .map_err(|e| ExtractError::Corrupt(format!("a damaged part: {e}")))?;
        if xml.len() as u64 > room {
            return Err(ExtractError::TooLarge);
        }
        budget.unpacked += xml.len() as u64;
        xml_text(&xml, out, budget)?;
        out.gap();
    }
    Ok(())
}

fn natural(s: &str) -> (String, u64) {
    let digits: String = s
        .chars()
        .rev()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    let n = digits
        .chars()
        .rev()
        .collect::<String>()
        .parse()
        .unwrap_or(0);
    (
        s.trim_end_matches(|c: char| !c.is_ascii_digit())
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .to_string(),
        n,
    )
}

/// The character data of an XML part, a word break at the end of each paragraph, cell, row or
/// line element. Read as a stream of events: no tree is built, nothing recurses.
fn xml_text(xml: &[u8], out: &mut Sink, budget: &Budget) -> Result<(), ExtractError> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut steps = 0u32;
    loop {
        steps += 1;
        if steps.is_multiple_of(4096) {
            budget.tick()?;
        }
        if out.full() {
            return Ok(());
        }
        match r.read_event_into(&mut buf) {
            Ok(Event::Text(t)) => {
                let raw = String::from_utf8_lossy(t.as_ref());
                out.push(&entities(&raw));
            }
            Ok(Event::CData(t)) => out.push(&String::from_utf8_lossy(t.as_ref())),
            Ok(Event::GeneralRef(r)) => {
                let name = String::from_utf8_lossy(r.as_ref()).to_string();
                out.push(&entities(&format!("&{name};")));
            }
            Ok(Event::End(e)) => {
                let local = e.local_name();
                if matches!(
                    local.as_ref(),
                    b"p" | b"tc" | b"c" | b"row" | b"br" | b"tab" | b"h" | b"si" | b"table-cell"
                ) {
                    out.gap();
                }
            }
            Ok(Event::Empty(e)) => {
                if matches!(
                    e.local_name().as_ref(),
                    b"br" | b"tab" | b"s" | b"line-break"
                ) {
                    out.gap();
                }
            }
            Ok(Event::Eof) => return Ok(()),
            Ok(_) => {}
            Err(e) => return Err(ExtractError::Corrupt(format!("damaged XML: {e}"))),
        }
        buf.clear();
    }
}

/// Finds `needle` in `hay` from `from`.
fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from >= hay.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The text of a PDF: its streams inflated (FlateDecode or none; others skipped), and the
/// strings of their text operators read.
fn pdf(bytes: &[u8], out: &mut Sink, budget: &mut Budget) -> Result<(), ExtractError> {
    if !bytes.starts_with(b"%PDF-") {
        return Err(ExtractError::Corrupt("not a PDF".into()));
    }
    let mut at = 0;
    let mut streams = 0;
    while let Some(s) = find(bytes, b"stream", at) {
        budget.part()?;
        // `endstream` also contains `stream`; a stream keyword follows a dictionary's `>>`.
        let before = &bytes[s.saturating_sub(2048)..s];
        let is_start = s >= 3 && !bytes[..s].ends_with(b"end");
        if !is_start {
            at = s + 6;
            continue;
        }
        let mut start = s + 6;
        if bytes.get(start) == Some(&b'\r') {
            start += 1;
        }
        if bytes.get(start) == Some(&b'\n') {
            start += 1;
        }
        let Some(end) = find(bytes, b"endstream", start) else {
            break;
        };
        at = end + 9;
        let dict_start = before.windows(2).rposition(|w| w == b"<<").unwrap_or(0);
        let dict = &before[dict_start..];
        let data = &bytes[start..end];
        let flate = find(dict, b"/FlateDecode", 0).is_some();
        let other_filter = !flate && find(dict, b"/Filter", 0).is_some();
        // Images, fonts and metadata hold no text the reader can use.
        let skip = other_filter
            || find(dict, b"/Subtype", 0).is_some()
            || find(dict, b"/Length1", 0).is_some()
            || find(dict, b"/Type/XRef", 0).is_some()
            || find(dict, b"/Type /XRef", 0).is_some()
            || find(dict, b"/Type/ObjStm", 0).is_some()
            || find(dict, b"/Type /ObjStm", 0).is_some();
        if skip {
            continue;
        }
        let content = if flate {
            let room = budget.room();
            let mut inflated = Vec::new();
            let mut z = flate2::read::ZlibDecoder::new(data).take(room + 1);
            // A damaged stream yields what inflated before the damage.
            let _ = z.read_to_end(&mut inflated);
            if inflated.len() as u64 > room {
                return Err(ExtractError::TooLarge);
            }
            budget.unpacked += inflated.len() as u64;
            inflated
        } else {
            data.to_vec()
        };
        content_text(&content, out, budget)?;
        streams += 1;
        if out.full() {
            break;
        }
    }
    if streams == 0 {
        return Err(ExtractError::Corrupt(
            "the PDF has no readable content".into(),
        ));
    }
    Ok(())
}

/// The strings a content stream shows: `(…)` literals and `<…>` hex strings before `Tj`, `'`,
/// `"` and inside `TJ` arrays. A `TJ` gap wider than a space's worth breaks words.
fn content_text(s: &[u8], out: &mut Sink, budget: &Budget) -> Result<(), ExtractError> {
    let mut i = 0;
    let mut pending: Vec<u8> = Vec::new();
    let mut in_text = false;
    let mut steps = 0u32;
    while i < s.len() {
        steps += 1;
        if steps.is_multiple_of(8192) {
            budget.tick()?;
        }
        match s[i] {
            b'(' => {
                let (lit, next) = literal(s, i + 1);
                pending.extend_from_slice(&lit);
                i = next;
            }
            b'<' if s.get(i + 1) != Some(&b'<') => {
                let end = s[i..]
                    .iter()
                    .position(|&c| c == b'>')
                    .map_or(s.len(), |p| i + p);
                pending.extend(hex(&s[i + 1..end]));
                i = end + 1;
            }
            b'-' | b'0'..=b'9' | b'.' if in_text => {
                // A number inside a TJ array: a large negative one is a word gap.
                let end = s[i..]
                    .iter()
                    .position(|c| !matches!(c, b'-' | b'0'..=b'9' | b'.'))
                    .map_or(s.len(), |p| i + p);
                if let Ok(n) = std::str::from_utf8(&s[i..end])
                    .unwrap_or("0")
                    .parse::<f64>()
                {
                    if n < -200.0 {
                        pending.push(b' ');
                    }
                }
                i = end.max(i + 1);
            }
            b'[' => {
                in_text = true;
                i += 1;
            }
            b']' => {
                in_text = false;
                i += 1;
            }
            b'T' if s.get(i + 1).is_some_and(|c| matches!(c, b'j' | b'J')) => {
                out.push(&decode(&pending));
                pending.clear();
                i += 2;
            }
            b'\'' | b'"' => {
                out.gap();
                out.push(&decode(&pending));
                pending.clear();
                i += 1;
            }
            b'T' if s
                .get(i + 1)
                .is_some_and(|c| matches!(c, b'd' | b'D' | b'*')) =>
            {
                out.gap();
                i += 2;
            }
            b'E' if s.get(i + 1) == Some(&b'T') => {
                out.gap();
                pending.clear();
                i += 2;
            }
            _ => i += 1,
        }
        if out.full() {
            break;
        }
    }
    Ok(())
}

/// A literal string from just after its `(`: the bytes with escapes resolved, and the index
/// after its `)`. Nested parentheses are counted, not recursed into.
fn literal(s: &[u8], mut i: usize) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut depth = 1usize;
    while i < s.len() {
        let c = s[i];
        match c {
            b'\\' => {
                i += 1;
                let Some(&e) = s.get(i) else { break };
                match e {
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'b' | b'f' => {}
                    b'0'..=b'7' => {
                        let mut v = 0u32;
                        let mut k = 0;
                        while k < 3 && s.get(i + k).is_some_and(|d| (b'0'..=b'7').contains(d)) {
                            v = v * 8 + u32::from(s[i + k] - b'0');
                            k += 1;
                        }
                        out.push((v & 0xff) as u8);
                        i += k;
                        continue;
                    }
                    b'\r' | b'\n' => {}
                    other => out.push(other),
                }
            }
            b'(' => {
                depth += 1;
                out.push(c);
            }
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return (out, i + 1);
                }
                out.push(c);
            }
            _ => out.push(c),
        }
        i += 1;
    }
    (out, s.len())
}

fn hex(s: &[u8]) -> Vec<u8> {
    let digits: Vec<u8> = s
        .iter()
        .filter_map(|c| (*c as char).to_digit(16).map(|d| d as u8))
        .collect();
    digits
        .chunks(2)
        .map(|p| (p[0] << 4) | p.get(1).copied().unwrap_or(0))
        .collect()
}

/// A shown string as text: UTF-16 with its byte-order mark, else PDFDocEncoding read as
/// Latin-1 (the same for the letters that matter).
fn decode(b: &[u8]) -> String {
    if b.starts_with(&[0xfe, 0xff]) {
        let units: Vec<u16> = b[2..]
            .chunks(2)
            .map(|p| u16::from_be_bytes([p[0], p.get(1).copied().unwrap_or(0)]))
            .collect();
        return String::from_utf16_lossy(&units);
    }
    b.iter().map(|&c| c as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn limits() -> TextLimits {
        TextLimits::default()
    }

    fn zip_of(parts: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, data) in parts {
            w.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    /// A small PDF with one page whose content stream is `content`, deflated or not.
    pub fn pdf_of(content: &str, deflate: bool) -> Vec<u8> {
        let (data, filter) = if deflate {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(content.as_bytes()).unwrap();
            (e.finish().unwrap(), " /Filter /FlateDecode")
        } else {
            (content.as_bytes().to_vec(), "")
        };
        let mut out = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n".to_vec();
        out.extend_from_slice(
            format!("4 0 obj << /Length {}{filter} >>\nstream\n", data.len()).as_bytes(),
        );
        out.extend_from_slice(&data);
        out.extend_from_slice(b"\nendstream\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF\n");
        out
    }

    #[test]
    fn plain_text_and_source_are_read_and_binary_refused() {
        assert_eq!(
            text(b"fn main() {\n  hello();\n}", Format::Plain, &limits()).unwrap(),
            "fn main() { hello(); }"
        );
        assert!(matches!(
            text(b"\x00\x01binary", Format::Plain, &limits()),
            Err(ExtractError::Corrupt(_))
        ));
    }

    #[test]
    fn html_loses_its_tags_scripts_and_entities() {
        let t = text(
            b"<html><head><style>p{}</style><script>var secret=1</script></head><body><p>Tom &amp; Jerry</p><!-- hidden --><b>bold</b></body></html>",
            Format::Html,
            &limits(),
        )
        .unwrap();
        assert_eq!(t, "Tom & Jerry bold");
    }

    #[test]
    fn office_documents_give_their_text() {
        let docx = zip_of(&[(
            "word/document.xml",
            br#"<?xml version="1.0"?><w:document xmlns:w="x"><w:body><w:p><w:r><w:t>Quarterly</w:t></w:r><w:r><w:t xml:space="preserve"> budget &amp; plan</w:t></w:r></w:p><w:p><w:r><w:t>Second</w:t></w:r></w:p></w:body></w:document>"#,
        )]);
        assert_eq!(
            text(&docx, Format::Docx, &limits()).unwrap(),
            "Quarterly budget & plan Second"
        );
        let xlsx = zip_of(&[
            (
                "xl/sharedStrings.xml",
                br#"<sst><si><t>Revenue</t></si><si><t>Costs</t></si></sst>"#,
            ),
            (
                "xl/worksheets/sheet1.xml",
                br#"<worksheet><sheetData><row><c><v>42</v></c></row></sheetData></worksheet>"#,
            ),
        ]);
        assert_eq!(
            text(&xlsx, Format::Xlsx, &limits()).unwrap(),
            "Revenue Costs 42"
        );
        let odt = zip_of(&[("content.xml", br#"<office:document-content xmlns:office="o" xmlns:text="t"><text:p>Hello<text:s/>world</text:p></office:document-content>"#)]);
        assert_eq!(
            text(&odt, Format::OpenDocument, &limits()).unwrap(),
            "Hello world"
        );
    }

    #[test]
    fn a_zip_bomb_stops_at_the_limit() {
        let zeros = vec![b'a'; 8 * 1024 * 1024];
        let bomb = zip_of(&[("word/document.xml", &zeros)]);
        assert!(bomb.len() < 200_000, "{}", bomb.len());
        let small = TextLimits {
            max_unpacked_bytes: 1024 * 1024,
            ..limits()
        };
        assert_eq!(
            text(&bomb, Format::Docx, &small),
            Err(ExtractError::TooLarge)
        );
    }

    #[test]
    fn a_file_that_claims_a_format_it_is_not_is_corrupt() {
        assert!(matches!(
            text(b"hello, I am text", Format::Pdf, &limits()),
            Err(ExtractError::Corrupt(_))
        ));
        assert!(matches!(
            text(b"hello, I am text", Format::Docx, &limits()),
            Err(ExtractError::Corrupt(_))
        ));
    }

    #[test]
    fn pdf_text_operators_are_read() {
        let p = pdf_of(
            "BT /F1 12 Tf 72 700 Td (Annual report) Tj T* [(Over)-20(view)-400(2024)] TJ ET",
            true,
        );
        assert_eq!(
            text(&p, Format::Pdf, &limits()).unwrap(),
            "Annual report Overview 2024"
        );
        let p = pdf_of("BT (esc\\(aped\\) \\101) Tj ET", false);
        assert_eq!(text(&p, Format::Pdf, &limits()).unwrap(), "esc(aped) A");
    }

    #[test]
    fn a_pdf_that_would_loop_or_nest_ends_in_time() {
        // Deep nesting and an unterminated string: walked, not recursed.
        let mut content = "[".repeat(200_000);
        content.push_str(&"(".repeat(200_000));
        let p = pdf_of(&content, true);
        let start = Instant::now();
        let _ = text(&p, Format::Pdf, &limits());
        assert!(start.elapsed() < Duration::from_secs(10));
        // Many tiny streams stop at the part limit.
        let mut many = b"%PDF-1.4\n".to_vec();
        for _ in 0..20_000 {
            many.extend_from_slice(b"<< >>stream\n(x) Tj\nendstream\n");
        }
        assert_eq!(
            text(&many, Format::Pdf, &limits()),
            Err(ExtractError::TooLarge)
        );
    }

    #[test]
    fn text_is_cut_at_the_limit() {
        let small = TextLimits {
            max_text_bytes: 10,
            ..limits()
        };
        let t = text("ééééééééééé".as_bytes(), Format::Plain, &small).unwrap();
        assert!(t.len() <= 10);
        assert!(t.chars().all(|c| c == 'é'));
    }

    #[test]
    fn formats_come_from_the_type_then_the_name() {
        assert_eq!(text_format("application/pdf", "x"), Some(Format::Pdf));
        assert_eq!(
            text_format("application/octet-stream", "main.rs"),
            Some(Format::Plain)
        );
        assert_eq!(
            text_format("application/octet-stream", "a.DOCX"),
            Some(Format::Docx)
        );
        assert_eq!(text_format("image/png", "a.png"), None);
    }
}
