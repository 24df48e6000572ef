//! The documentation as a reader uses it: the shell examples of `README.md` and of every page
//! in `docs/` run as written, in order, against the built `cofferd` on a fresh data directory;
//! `docs/README.md` links every page; and no text in the repository points at files outside it.
//!
//! A ```` ```sh ```` block is run unless the line before it is an HTML comment
//! `<!-- example: not run (REASON) -->` (a block that builds, installs, or needs a remote host).
//! So a new example is tested the day it is written, and a skipped one says why.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_cofferd");

/// The address the examples are written for (`cofferd`'s default); the test serves on a spare
/// port and rewrites it.
const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// The marker that leaves the next block out, with its reason.
const NOT_RUN: &str = "<!-- example: not run (";

/// How long one document's examples may take, all together, on a busy machine.
const DOC_TIMEOUT: Duration = Duration::from_secs(300);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A shell block of a document: where it starts (1-based line of the fence) and its text.
struct Block {
    line: usize,
    text: String,
}

/// The shell blocks of a Markdown text that are to be run, in order. Panics on a marker that
/// gives no reason, on a marker before something other than a shell block, and on an unclosed
/// fence, so a mistake in the markup cannot silently leave an example out.
fn runnable_blocks(name: &str, markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = markdown.lines().enumerate();
    let mut skip_next: Option<usize> = None;
    while let Some((i, line)) = lines.next() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix(NOT_RUN) {
            let reason = rest.strip_suffix(") -->").unwrap_or("");
            assert!(
                !reason.trim().is_empty(),
                "{name}:{}: a not-run marker says why: `{NOT_RUN}REASON) -->`",
                i + 1
            );
            skip_next = Some(i + 1);
            continue;
        }
        let Some(lang) = trimmed.strip_prefix("```") else {
            if !trimmed.is_empty() {
                assert!(
                    skip_next.is_none(),
                    "{name}:{}: a not-run marker must come right before a ```sh block",
                    skip_next.unwrap_or(0)
                );
            }
            continue;
        };
        let shell = matches!(lang.trim(), "sh" | "bash" | "shell");
        assert!(
            skip_next.is_none() || shell,
            "{name}:{}: a not-run marker must come right before a ```sh block",
            skip_next.unwrap_or(0)
        );
        let mut text = String::new();
        let mut closed = false;
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                closed = true;
                break;
            }
            text.push_str(l);
            text.push('\n');
        }
        assert!(closed, "{name}:{}: the code block is never closed", i + 1);
        if shell && skip_next.take().is_none() {
            blocks.push(Block { line: i + 1, text });
        }
    }
    blocks
}

/// A `cofferd serve` on a spare loopback port in a fresh directory, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A command with none of the caller's `COFFER_*` settings, so the examples meet the defaults
/// a reader has.
fn clean(mut c: Command) -> Command {
    for (k, _) in std::env::vars() {
        if k.starts_with("COFFER_") {
            c.env_remove(k);
        }
    }
    c
}

/// Starts the server the way the README's `cargo run --release` does (the default data
/// directory `./coffer-data` of the working directory), on a spare port.
fn serve(work: &Path) -> Server {
    let port = free_port();
    let mut c = clean(Command::new(BIN));
    let child = c
        .arg("serve")
        .current_dir(work)
        .env("COFFER_LISTEN", format!("127.0.0.1:{port}"))
        .env("COFFER_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start cofferd");
    let server = Server { child, port };
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(2))
        .build();
    let deadline = Instant::now() + Duration::from_secs(60);
    while agent
        .get(&format!("http://127.0.0.1:{port}/health"))
        .call()
        .is_err()
    {
        assert!(Instant::now() < deadline, "cofferd did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

/// What running a document's examples left behind.
struct Run {
    stdout: String,
    work: tempfile::TempDir,
    _server: Server,
}

/// Runs the examples of one document, in order, in one bash (as a reader pastes them into one
/// terminal) in a fresh working directory that holds the repository's `examples/`, with a
/// `cofferd` on PATH and a server running. Panics with the failing block and the output when
/// one fails.
fn run_examples(doc: &str) -> Run {
    let markdown = std::fs::read_to_string(root().join(doc)).unwrap();
    let blocks = runnable_blocks(doc, &markdown);
    let work = tempfile::tempdir().unwrap();
    let bin = work.path().join(".bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("cofferd")).unwrap();
    std::os::unix::fs::symlink(
        root().join("examples").canonicalize().unwrap(),
        work.path().join("examples"),
    )
    .unwrap();
    let server = serve(work.path());

    let addr = format!("127.0.0.1:{}", server.port);
    let mut script = String::from("set -euo pipefail\n");
    for b in &blocks {
        // Which block runs is on stderr, so a failure names it.
        script.push_str(&format!("echo '>>> {doc}:{}' >&2\n", b.line));
        script.push_str(&b.text.replace(DEFAULT_ADDR, &addr));
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = clean(Command::new("bash"));
    let mut child = c
        .arg("-c")
        .arg(&script)
        .current_dir(work.path())
        .env("PATH", path)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash");
    // Read both pipes while it runs, so a chatty example cannot fill one and stall.
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + DOC_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = out_reader.join().unwrap();
    let stderr = err_reader.join().unwrap();
    match status {
        Some(s) if s.success() => {}
        Some(s) => panic!(
            "{doc}: an example failed ({s}); the last `>>>` line names the block\n\
             --- stderr\n{stderr}\n--- stdout\n{stdout}"
        ),
        None => panic!(
            "{doc}: the examples did not finish in {DOC_TIMEOUT:?}\n--- stderr\n{stderr}\n\
             --- stdout\n{stdout}"
        ),
    }
    Run {
        stdout,
        work,
        _server: server,
    }
}

#[test]
fn the_readme_examples_run_as_written() {
    let run = run_examples("README.md");
    let out = &run.stdout;
    // The upload landed in My Folder and its content comes back whole and by range.
    assert!(
        out.contains(r#""name":"report.txt""#),
        "the folder listing names the upload: {out}"
    );
    let work = run.work.path();
    let written = std::fs::read(work.join("report.txt")).expect("the example writes report.txt");
    let downloaded = std::fs::read(work.join("copy.txt")).expect("the example downloads copy.txt");
    assert_eq!(downloaded, written, "the download is the upload");
    assert!(
        out.contains("Q3 figures\n"),
        "the range request answers the first line: {out}"
    );
    // The mail was accepted; the web form names the example's fields; the SCIM user exists.
    assert!(out.contains(r#""status":"queued""#), "sendFile: {out}");
    assert!(out.contains(r#""label":"Your name""#), "webform: {out}");
    assert!(
        out.contains(r#""userName":"dan@example.com""#),
        "SCIM: {out}"
    );
}

#[test]
fn every_docs_page_with_examples_runs_them() {
    let mut pages: Vec<_> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md"))
        .collect();
    pages.sort();
    let mut ran = Vec::new();
    for page in pages {
        let doc = format!("docs/{page}");
        let text = std::fs::read_to_string(root().join(&doc)).unwrap();
        if !runnable_blocks(&doc, &text).is_empty() {
            ran.push((page, run_examples(&doc).stdout));
        }
    }
    // The web-forms page defines the example form and lists it.
    let (_, forms) = ran
        .iter()
        .find(|(page, _)| page == "web-forms.md")
        .expect("docs/web-forms.md has examples that run");
    assert!(forms.contains(r#""name":"Contact""#), "webform: {forms}");
}

#[test]
fn the_marker_leaves_out_exactly_the_next_block() {
    let md = "```sh\necho a\n```\n\n<!-- example: not run (needs a host) -->\n```sh\necho b\n```\n\
              ```text\nnot shell\n```\n```bash\necho c\n```\n";
    let blocks = runnable_blocks("t.md", md);
    let texts: Vec<_> = blocks.iter().map(|b| b.text.as_str()).collect();
    assert_eq!(texts, ["echo a\n", "echo c\n"]);
    assert_eq!(blocks[1].line, 12);
}

#[test]
#[should_panic(expected = "says why")]
fn a_marker_without_a_reason_is_refused() {
    runnable_blocks("t.md", "<!-- example: not run () -->\n```sh\necho\n```\n");
}

#[test]
#[should_panic(expected = "right before")]
fn a_marker_away_from_its_block_is_refused() {
    runnable_blocks(
        "t.md",
        "<!-- example: not run (why) -->\nsome text\n```sh\necho\n```\n",
    );
}

#[test]
fn the_docs_index_links_every_page() {
    let index = std::fs::read_to_string(root().join("docs/README.md")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") && name != "README.md" && !index.contains(&format!("]({name})")) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "docs/README.md does not link {missing:?}"
    );
    // And every page it links exists.
    for link in index.split("](").skip(1) {
        let target = link.split(')').next().unwrap();
        if !target.contains("://") {
            let file = target.split('#').next().unwrap();
            assert!(
                root().join("docs").join(file).exists(),
                "docs/README.md links {target}, which does not exist"
            );
        }
    }
}

/// Text files of the repository: everything but git's own, build output, installed
/// dependencies and what the examples and benchmarks leave behind.
fn repository_texts(dir: &Path, found: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap_or_default();
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            if !matches!(
                name.as_str(),
                ".git" | "target" | "node_modules" | "coffer-data" | "bench-out"
            ) {
                repository_texts(&path, found);
            }
        } else if kind.is_file() && name != ".git" && entry.metadata().unwrap().len() < 4 << 20 {
            if let Ok(text) = std::fs::read_to_string(&path) {
                found.push((path, text));
            }
        }
    }
}

#[test]
fn nothing_points_outside_the_repository() {
    // Spelled in pieces, so this file does not find itself.
    let outside = [concat!("../", "shared"), concat!("/work", "/")];
    let root = root().canonicalize().unwrap();
    let mut files = Vec::new();
    repository_texts(&root, &mut files);
    assert!(files.len() > 50, "the repository was not found at {root:?}");
    let mut hits = Vec::new();
    for (path, text) in &files {
        for (n, line) in text.lines().enumerate() {
            if outside.iter().any(|p| line.contains(p)) {
                hits.push(format!("{}:{}: {line}", path.display(), n + 1));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "paths outside the repository:\n{}",
        hits.join("\n")
    );
}
