//! Seeds a cofferd data directory for the search benchmark (not a test): `scripts/bench-search.sh`
//! runs it, then starts the release `cofferd serve` on the directory, whose job worker reads the
//! text of every file into the index, and measures `GET /rest/query` over HTTP.
//!
//! `cargo run --release -p coffer-tests --bin search-bench DATA_DIR [FILES] [EMAILS]` opens
//! (creating and migrating) `sqlite://DATA_DIR/coffer.db` with the blob store in
//! `DATA_DIR/storage` (cofferd's defaults), which must hold no users yet, and writes through the
//! store directly (an upload over HTTP per file would measure uploads, not search):
//! - 50 users (`user{u}@example.com`), each with 10 folders in "My Folder"; user u's first
//!   folder is shared with the next four users as Viewer, its second with the fifth as Uploader;
//! - FILES files (default 100,000) spread evenly over the users and their folders, named by three
//!   words of a generated word list and holding 40 words of it, every hundredth a PDF or a DOCX
//!   (alternately) of the same words, the rest plain text; each blob stored in the blob store;
//! - EMAILS emails (default 10,000) between the users, subjects and bodies of the same words.
//!
//! The files are left `pending` extraction (the trigger queued their `search-extract` jobs), no
//! previews or scans are queued. Prints one JSON line on stdout: the first-party client's id and
//! secret, every user's address and password, and the word list; progress goes to stderr.

use bytes::Bytes;
use coffer_domain::Role;
use coffer_service::{Config, DatabaseUrl};
use coffer_store::emails::{Email, Entry};
use coffer_store::models::{FileVersion, Member};
use serde_json::json;
use std::io::Write;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

const USERS: usize = 50;
const FOLDERS: usize = 10;
const WORDS: usize = 5000;
const BATCH: usize = 2000;

/// A small deterministic generator (xorshift), so that every run seeds the same corpus.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Pronounceable words of two to four syllables, all different.
fn word_list(rng: &mut Rng) -> Vec<String> {
    const ON: [&str; 16] = [
        "b", "c", "d", "f", "g", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st",
    ];
    const NU: [&str; 6] = ["a", "e", "i", "o", "u", "ou"];
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(WORDS);
    while out.len() < WORDS {
        let n = 2 + rng.below(3);
        let w: String = (0..n)
            .map(|_| format!("{}{}", ON[rng.below(ON.len())], NU[rng.below(NU.len())]))
            .collect();
        if seen.insert(w.clone()) {
            out.push(w);
        }
    }
    out
}

fn words(rng: &mut Rng, list: &[String], n: usize) -> String {
    (0..n)
        .map(|_| list[rng.below(list.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A one-page PDF showing `text` with a standard font, its content stream deflated.
fn pdf(text: &str) -> Vec<u8> {
    let content = format!("BT /F1 11 Tf 72 720 Td ({text}) Tj ET");
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(content.as_bytes()).expect("deflate");
    let data = z.finish().expect("deflate");
    let mut out = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n\
3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >> endobj\n"
        .to_vec();
    out.extend_from_slice(
        format!(
            "4 0 obj << /Length {} /Filter /FlateDecode >>\nstream\n",
            data.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(&data);
    out.extend_from_slice(b"\nendstream\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF\n");
    out
}

/// A DOCX whose one paragraph is `text`.
fn docx(text: &str) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let o = zip::write::SimpleFileOptions::default();
    w.start_file("[Content_Types].xml", o).expect("zip");
    w.write_all(br#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>"#)
        .expect("zip");
    w.start_file("word/document.xml", o).expect("zip");
    write!(
        w,
        r#"<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:body></w:document>"#
    )
    .expect("zip");
    w.finish().expect("zip").into_inner()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1) else {
        eprintln!("usage: search-bench DATA_DIR [FILES] [EMAILS]");
        std::process::exit(2);
    };
    let number = |i: usize, default: usize| -> usize {
        match args.get(i) {
            None => default,
            Some(a) => a.parse().unwrap_or_else(|_| {
                eprintln!("search-bench: {a:?} is not a number");
                std::process::exit(2)
            }),
        }
    };
    let n_files = number(2, 100_000);
    let n_emails = number(3, 10_000);
    std::fs::create_dir_all(dir).expect("create the data directory");
    let url = DatabaseUrl::new(format!("sqlite://{dir}/coffer.db"));
    let mut config = Config::new("http://127.0.0.1", "Coffer");
    config.storage_url = Some(format!("{dir}/storage"));
    let ctx = coffer_service::open(&url, 2, config).expect("open the database");
    let existing = ctx
        .with_conn(|c| Ok(coffer_store::users::count(c)?))
        .expect("count users");
    if existing > 0 {
        eprintln!("search-bench: {dir}/coffer.db already holds users; give a fresh directory");
        std::process::exit(1);
    }
    let boot = coffer_service::identity::accounts::bootstrap(&ctx)
        .expect("bootstrap")
        .expect("first start");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let list = word_list(&mut rng);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    let t0 = now - 86_400;
    let started = Instant::now();

    // Users and their folders.
    let mut users = Vec::new();
    for u in 0..USERS {
        let (user, pw) = coffer_service::identity::accounts::create_user(
            &ctx,
            coffer_service::identity::accounts::NewUser {
                email: format!("user{u}@example.com"),
                name: format!("User {u}"),
                password: None,
                role: Role::User,
                profile: None,
            },
            None,
        )
        .expect("create user");
        users.push((user, pw));
    }
    let mut folders: Vec<Vec<String>> = Vec::new();
    ctx.write(|c| {
        for (u, (user, _)) in users.iter().enumerate() {
            let root = coffer_store::content::object(c, &user.syncdir_id)?.expect("My Folder");
            let mut mine = Vec::new();
            for k in 0..FOLDERS {
                let name = format!("{} {u}-{k}", list[(u * FOLDERS + k) % WORDS]);
                let mut o = coffer_service::content::new_object(&root, "d", &name, &user.id);
                o.created_at = t0;
                o.modified_at = t0;
                coffer_store::content::insert_object(c, &o)?;
                mine.push(o.id);
            }
            folders.push(mine);
        }
        for u in 0..USERS {
            let share = |c: &mut coffer_store::DbConn, folder: &str, to: usize, role: i64| {
                coffer_store::content::put_member(
                    c,
                    &Member {
                        object_id: folder.to_string(),
                        user_id: users[to % USERS].0.id.clone(),
                        role_id: role,
                        shared_by: users[u].0.id.clone(),
                        notify_file_added: false,
                        created_at: t0,
                    },
                )
            };
            for d in 1..=4 {
                share(c, &folders[u][0], u + d, 4)?;
            }
            share(c, &folders[u][1], u + 5, 5)?;
        }
        Ok(())
    })
    .expect("folders");
    eprintln!("search-bench: {USERS} users, {} folders", USERS * FOLDERS);

    // Files, BATCH per transaction.
    let mut i = 0;
    let mut raw_bytes = 0u64;
    while i < n_files {
        let end = (i + BATCH).min(n_files);
        let mut rows = Vec::with_capacity(end - i);
        for k in i..end {
            let u = k % USERS;
            let folder = &folders[u][(k / USERS) % FOLDERS];
            let text = words(&mut rng, &list, 40);
            let stem = format!("{} {k}", words(&mut rng, &list, 3));
            let (name, bytes) = if k % 100 == 7 {
                (format!("{stem}.pdf"), pdf(&text))
            } else if k % 100 == 57 {
                (format!("{stem}.docx"), docx(&text))
            } else {
                (format!("{stem}.txt"), text.into_bytes())
            };
            raw_bytes += bytes.len() as u64;
            let put = rt
                .block_on(ctx.storage.put_bytes(Bytes::from(bytes)))
                .expect("store the blob");
            rows.push((u, folder.clone(), name, put));
        }
        ctx.write(|c| {
            for (u, folder, name, put) in &rows {
                let user = &users[*u].0;
                let parent = coffer_store::content::object(c, folder)?.expect("folder");
                let mut o = coffer_service::content::new_object(&parent, "f", name, &user.id);
                o.created_at = t0;
                o.modified_at = t0;
                coffer_store::content::insert_object(c, &o)?;
                let v = FileVersion {
                    id: uuid::Uuid::new_v4().to_string(),
                    file_id: o.id.clone(),
                    number: 1,
                    blob_id: put.key.as_str().to_string(),
                    name: name.clone(),
                    size: put.size as i64,
                    mime: coffer_domain::content::guess_mime(name).to_string(),
                    creator_id: user.id.clone(),
                    created_at: t0,
                    client_created_at: None,
                    client_modified_at: None,
                    av_status: "allowed".into(),
                    av_signature: None,
                    preview_status: "failed".into(),
                    preview_blob_id: None,
                    deleted: false,
                };
                coffer_store::content::reference_blob(c, &v.blob_id, v.size, &put.md5, t0)?;
                coffer_store::content::insert_version(c, &v)?;
                coffer_store::content::set_current_version(c, &o.id, &v, &user.id, t0)?;
            }
            Ok(())
        })
        .expect("insert files");
        i = end;
        eprintln!("search-bench: {i} files");
    }

    // Mail, sender's and recipient's entries.
    let mut e = 0;
    while e < n_emails {
        let end = (e + BATCH).min(n_emails);
        let mut batch = Vec::new();
        for k in e..end {
            let from = &users[k % USERS].0;
            let to = &users[(k * 7 + 3) % USERS].0;
            batch.push((
                from.id.clone(),
                to.id.clone(),
                words(&mut rng, &list, 5),
                words(&mut rng, &list, 60),
            ));
        }
        ctx.write(|c| {
            for (from, to, subject, body) in &batch {
                let id = uuid::Uuid::new_v4().to_string();
                coffer_store::emails::insert(
                    c,
                    &Email {
                        id: id.clone(),
                        sender_id: from.clone(),
                        actor_id: from.clone(),
                        status: "sent".into(),
                        kind: "original".into(),
                        subject: subject.clone(),
                        body: body.clone(),
                        acl: "internal".into(),
                        secure_body: false,
                        self_copy: false,
                        include_fingerprint: false,
                        expire_at: None,
                        parent_email_id: None,
                        web_form_id: None,
                        web_form_fields: None,
                        error: None,
                        created_at: t0,
                        modified_at: t0,
                        sent_at: Some(t0),
                        withdrawn_at: None,
                    },
                )?;
                let entry = |user: &str, role: &str, bucket: &str| Entry {
                    user_id: user.to_string(),
                    email_id: id.clone(),
                    role: role.into(),
                    bucket: bucket.into(),
                    is_read: false,
                    trashed_at: None,
                    created_at: t0,
                    modified_at: t0,
                };
                let mut entries = vec![entry(from, "s", "sent")];
                if to != from {
                    entries.push(entry(to, "r", "inbox"));
                }
                coffer_store::emails::put_entries(c, &entries)?;
            }
            Ok(())
        })
        .expect("insert mail");
        e = end;
        eprintln!("search-bench: {e} emails");
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "search-bench: seeded {n_files} files ({} MiB) and {n_emails} emails in {secs:.1} s",
        raw_bytes / 1_048_576
    );
    // Closing the pool checkpoints the write-ahead log, so the server starts on a compact file.
    drop(ctx);
    let accounts: Vec<_> = users
        .iter()
        .map(|(u, pw)| json!({"email": u.email, "password": pw}))
        .collect();
    println!(
        "{}",
        json!({
            "clientId": boot.client_id,
            "clientSecret": boot.client_secret,
            "users": accounts,
            "words": list,
        })
    );
}
