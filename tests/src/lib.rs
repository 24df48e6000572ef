//! End-to-end test support: [`TestApp`] starts the real server on a loopback port with a fresh
//! database (a temporary SQLite file, or a new PostgreSQL database when
//! `COFFER_TEST_POSTGRES_URL` is set) and drives it over HTTP; [`TestApp::builder`] starts one
//! with adjusted firewall rules, configuration or HTTP settings. The calls and assertions the
//! suites share (sign-in, the password grant, the current user, the REST error envelope, the
//! outbox, the SMTP test server) live here once.

pub mod receiver;

use coffer_domain::Role;
use coffer_service::{Config, Ctx, DatabaseUrl};
use serde_json::Value;
use std::collections::HashMap;
use std::net::TcpListener;

/// A response as a client sees it.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub text: String,
    /// The body as sent (a download's bytes).
    pub bytes: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The first error code of a REST error envelope.
    pub fn code(&self) -> String {
        self.json()["errors"][0]["code"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Asserts a 429 `ERR_REQUEST_RATE_LIMITED` answer and returns its `Retry-After` seconds.
    pub fn rate_limited(&self) -> i64 {
        assert_eq!(
            (self.status, self.code()),
            (429, "ERR_REQUEST_RATE_LIMITED".to_string()),
            "{}",
            self.text
        );
        self.header("retry-after")
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no Retry-After: {:?}", self.headers))
    }

    /// The value of the cookie `name` this response sets.
    pub fn cookie_value(&self, name: &str) -> Option<String> {
        self.cookies().iter().find_map(|c| {
            c.split(';')
                .next()?
                .strip_prefix(&format!("{name}="))
                .map(str::to_string)
        })
    }

    pub fn cookies(&self) -> Vec<String> {
        self.headers
            .get("set-cookie")
            .map(|c| c.split('\n').map(str::to_string).collect())
            .unwrap_or_default()
    }
}

/// Access tokens with their family's owner and state, for [`TestApp::count`] (a token row keeps
/// only its key, scope and lifetime; user, client, device and revocation are the family's).
pub const ACCESS_TOKENS: &str =
    "access_tokens JOIN token_families ON token_families.id = access_tokens.family_id";
/// Refresh tokens with their family's owner and state, for [`TestApp::count`].
pub const REFRESH_TOKENS: &str =
    "refresh_tokens JOIN token_families ON token_families.id = refresh_tokens.family_id";

/// The current Unix time in seconds.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Polls `done` every 20 ms until it holds; fails the test after `secs` seconds, naming `what`.
pub fn wait_until(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !done() {
        assert!(
            std::time::Instant::now() < until,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The value of the hidden form field `name` in a page.
pub fn hidden_field(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no {name} in {html}"))
        + marker.len();
    html[start..start + html[start..].find('"').unwrap()].to_string()
}

/// A fresh database for one test: a SQLite file under `dir`, or a new PostgreSQL database when
/// `COFFER_TEST_POSTGRES_URL` is set. Keep the guard alive as long as the database is used.
pub fn fresh_database(dir: &std::path::Path) -> (DatabaseUrl, Option<PgDatabase>) {
    match std::env::var("COFFER_TEST_POSTGRES_URL") {
        Ok(admin) if !admin.is_empty() => {
            let (u, g) = pg_database(&admin);
            (u, Some(g))
        }
        _ => (
            DatabaseUrl::new(format!("sqlite://{}/coffer.db", dir.display())),
            None,
        ),
    }
}

/// A fresh PostgreSQL database, dropped afterwards.
pub struct PgDatabase {
    admin_url: String,
    name: String,
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        if let Ok(mut c) = coffer_store::establish(&DatabaseUrl::new(self.admin_url.clone())) {
            let _ = coffer_store::batch_execute(
                &mut c,
                &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
            );
        }
    }
}

fn pg_database(admin_url: &str) -> (DatabaseUrl, PgDatabase) {
    let name = format!("coffer_test_{}", uuid::Uuid::new_v4().simple());
    let mut c = coffer_store::establish(&DatabaseUrl::new(admin_url))
        .expect("COFFER_TEST_POSTGRES_URL answers");
    coffer_store::batch_execute(&mut c, &format!("CREATE DATABASE {name}"))
        .expect("create test database");
    let mut url = url::Url::parse(admin_url).expect("COFFER_TEST_POSTGRES_URL is a URL");
    url.set_path(&format!("/{name}"));
    (
        DatabaseUrl::new(url.to_string()),
        PgDatabase {
            admin_url: admin_url.to_string(),
            name,
        },
    )
}

/// The backend the suite runs on.
pub fn backend_name() -> &'static str {
    if std::env::var("COFFER_TEST_POSTGRES_URL").is_ok_and(|v| !v.is_empty()) {
        "postgres"
    } else {
        "sqlite"
    }
}

/// A running server with its database.
pub struct TestApp {
    pub base: String,
    pub ctx: Ctx,
    pub admin: coffer_service::identity::accounts::Bootstrap,
    agent: ureq::Agent,
    handle: actix_web::dev::ServerHandle,
    /// Webhook delivery, when the test started it.
    pub delivery: Option<coffer_delivery::Workers>,
    url: DatabaseUrl,
    _dir: tempfile::TempDir,
    _pg: Option<PgDatabase>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let h = self.handle.clone();
        // Stop the server before the database goes.
        let _ =
            std::thread::spawn(move || actix_web::rt::System::new().block_on(h.stop(false))).join();
    }
}

/// How a [`TestApp`] starts: the firewall rules and adjustments of the services' configuration
/// and of the HTTP layer's settings, applied in the order given. `TestApp::builder()` starts
/// from the shipped rules and the defaults every test otherwise gets.
pub struct TestAppBuilder<'a> {
    waf: coffer_http::Waf,
    config: Vec<Adjust<'a, Config>>,
    http: Vec<Adjust<'a, coffer_http::AppState>>,
}

/// One adjustment of a [`TestAppBuilder`].
type Adjust<'a, T> = Box<dyn FnOnce(&mut T) + 'a>;

impl<'a> TestAppBuilder<'a> {
    /// Firewall rules in place of the shipped ones.
    pub fn waf(mut self, waf: coffer_http::Waf) -> Self {
        self.waf = waf;
        self
    }

    /// Adjusts the services' configuration (limits, gateways, the scanner, …).
    pub fn config(mut self, adjust: impl FnOnce(&mut Config) + 'a) -> Self {
        self.config.push(Box::new(adjust));
        self
    }

    /// Adjusts the HTTP layer's settings (e.g. the body timeout).
    pub fn http(mut self, adjust: impl FnOnce(&mut coffer_http::AppState) + 'a) -> Self {
        self.http.push(Box::new(adjust));
        self
    }

    /// Starts the server on a loopback port with a fresh database.
    pub fn spawn(self) -> TestApp {
        TestApp::start(self)
    }
}

impl TestApp {
    /// Starts a server with the shipped firewall rules and the default configuration.
    pub fn spawn() -> TestApp {
        Self::builder().spawn()
    }

    /// A server to adjust before it starts; see [`TestAppBuilder`].
    pub fn builder<'a>() -> TestAppBuilder<'a> {
        TestAppBuilder {
            waf: coffer_http::Waf::default_rules(),
            config: Vec::new(),
            http: Vec::new(),
        }
    }

    fn start(builder: TestAppBuilder<'_>) -> TestApp {
        let TestAppBuilder {
            waf,
            config: adjust,
            http: adjust_http,
        } = builder;
        let dir = tempfile::tempdir().expect("temp dir");
        let (url, pg) = fresh_database(dir.path());
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let mut config = Config::new(&base, "Coffer");
        config.storage_url = test_storage_url(dir.path());
        config.sources.key_file = Some(dir.path().join("secret.key"));
        for a in adjust {
            a(&mut config);
        }
        let ctx = coffer_service::open(&url, 8, config).expect("open database");
        // The areas plug into the content core as `cofferd serve` plugs them in.
        ctx.jobs.register(coffer_service::content::jobs::KINDS);
        ctx.jobs.register(coffer_service::web_forms::drafts::JOBS);
        ctx.jobs.register(coffer_service::mail::outbox::JOBS);
        ctx.jobs
            .register(coffer_service::notifications::deliver::JOBS);
        ctx.jobs.register(coffer_service::search::index::JOBS);
        ctx.jobs.register(coffer_service::dli::upkeep::JOBS);
        ctx.jobs.register(coffer_service::sources::transfer::JOBS);
        ctx.jobs.register(coffer_service::dli::exports::JOBS);
        ctx.upload_completion
            .set(coffer_service::mail::attach_uploaded);
        ctx.upload_completion
            .add(coffer_service::request_files::TARGET);
        let admin = coffer_service::identity::accounts::bootstrap(&ctx)
            .expect("bootstrap")
            .expect("first start");
        let mut state = coffer_http::AppState::new(ctx.clone(), waf);
        for a in adjust_http {
            a(&mut state);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = coffer_http::server(state, listener, 2).expect("server");
                tx.send(server.handle()).unwrap();
                let _ = server.await;
            })
        });
        let handle = rx.recv().expect("server started");
        let agent = ureq::AgentBuilder::new()
            .redirects(0)
            .timeout(std::time::Duration::from_secs(30))
            .build();
        TestApp {
            base,
            ctx,
            admin,
            agent,
            handle,
            delivery: None,
            url,
            _dir: dir,
            _pg: pg,
        }
    }

    /// The database as another node of a cluster sees it: on PostgreSQL a pool of its own (its
    /// workers hear of new work only through the database, as another node's would); on SQLite,
    /// whose database one process owns, this node's.
    pub fn other_node_db(&self) -> coffer_store::Db {
        match self.ctx.db.backend() {
            coffer_store::Backend::Postgres => {
                coffer_store::Db::open(&self.url, 4).expect("a second pool")
            }
            coffer_store::Backend::Sqlite => self.ctx.db.clone(),
        }
    }

    /// Starts webhook delivery with a loopback-friendly configuration and the given retry
    /// schedule (e.g. "100ms,100ms").
    pub fn start_delivery(&mut self, schedule: &str) {
        let config = coffer_delivery::Config {
            allow_private: true,
            timeout: std::time::Duration::from_secs(5),
            schedule: coffer_delivery::parse_schedule(schedule).expect("schedule"),
            poll: std::time::Duration::from_millis(20),
            workers: 8,
        };
        self.delivery =
            Some(coffer_delivery::spawn(self.ctx.db.clone(), config).expect("delivery workers"));
    }

    /// Sends a request; `body` is JSON when given as a `Value`, or raw text with its content type.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Body>,
    ) -> Resp {
        let mut req = self
            .agent
            .request(method, &format!("{}{}", self.base, path));
        for (k, v) in headers {
            req = req.set(k, v);
        }
        let result = match body {
            None => req.call(),
            Some(Body::Json(v)) => req
                .set("Content-Type", "application/json")
                .send_string(&v.to_string()),
            Some(Body::Raw(ct, s)) => req.set("Content-Type", ct).send_string(&s),
            Some(Body::Bytes(ct, b)) => req.set("Content-Type", &ct).send_bytes(&b),
            Some(Body::Form(pairs)) => {
                let s = serde_urlencoded::to_string(&pairs).unwrap();
                req.set("Content-Type", "application/x-www-form-urlencoded")
                    .send_string(&s)
            }
        };
        let resp = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{method} {path}: {e}"),
        };
        let status = resp.status();
        let mut headers = HashMap::new();
        for name in resp.headers_names() {
            let all: Vec<&str> = resp.all(&name);
            headers.insert(name.to_ascii_lowercase(), all.join("\n"));
        }
        let mut bytes = Vec::new();
        let _ = std::io::Read::read_to_end(&mut resp.into_reader(), &mut bytes);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Resp {
            status,
            headers,
            text,
            bytes,
        }
    }

    /// A `/rest` call with the version header and a bearer token.
    pub fn rest(&self, method: &str, path: &str, token: &str, body: Option<Value>) -> Resp {
        let auth = format!("Bearer {token}");
        self.send(
            method,
            path,
            &[("X-Coffer-Version", "28"), ("Authorization", &auth)],
            body.map(Body::Json),
        )
    }

    /// A `/rest` call with a body of any type (e.g. a [`multipart`] upload).
    pub fn rest_body(
        &self,
        method: &str,
        path: &str,
        token: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Resp {
        let auth = format!("Bearer {token}");
        self.send(
            method,
            path,
            &[("X-Coffer-Version", "28"), ("Authorization", &auth)],
            Some(Body::Bytes(content_type.to_string(), body)),
        )
    }

    /// The server's database, for tools run beside it (`cofferd backup`).
    pub fn database_url(&self) -> &DatabaseUrl {
        &self.url
    }

    /// Runs the job queue until nothing is due (scans, previews, sweeps), as a node's worker
    /// would.
    pub fn run_jobs(&self) -> usize {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(coffer_service::content::jobs::run_due(
                &self.ctx,
                "test-node",
            ))
            .expect("jobs")
    }

    /// A one-shot upload of `bytes` as `name` into a folder (`POST …/actions/file`).
    pub fn upload(&self, token: &str, folder: &str, name: &str, bytes: &[u8]) -> Resp {
        let (ct, body) = multipart(&[("body", Some(name), bytes)]);
        self.rest_body(
            "POST",
            &format!("/rest/folders/{folder}/actions/file"),
            token,
            &ct,
            body,
        )
    }

    /// Uploads `bytes` as `name` into the caller's "My Folder": the new file's id.
    pub fn upload_to_my_folder(&self, token: &str, name: &str, bytes: &[u8]) -> String {
        let r = self.rest("GET", "/rest/users/me", token, None);
        assert_eq!(r.status, 200, "{}", r.text);
        let sync = r.json()["syncdirId"].as_str().unwrap().to_string();
        let r = self.upload(token, &sync, name, bytes);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["id"].as_str().unwrap().to_string()
    }

    /// `POST /rest/mail/actions/sendFile`, which must answer 201: the email.
    pub fn send_mail(&self, token: &str, body: Value) -> Value {
        let r = self.rest("POST", "/rest/mail/actions/sendFile", token, Some(body));
        assert_eq!(r.status, 201, "{}", r.text);
        r.json()
    }

    /// The JSON sign-in (`POST /rest/users/actions/login`, referral `/#/home`), with the
    /// browser's cookies when given.
    pub fn json_login(&self, email: &str, password: &str, cookie: Option<&str>) -> Resp {
        let mut h = vec![("X-Coffer-Version", "28")];
        if let Some(c) = cookie {
            h.push(("Cookie", c));
        }
        self.send(
            "POST",
            "/rest/users/actions/login",
            &h,
            Some(Body::Json(serde_json::json!(
                {"username": email, "password": password, "referral": "/#/home"}
            ))),
        )
    }

    pub fn form(&self, path: &str, pairs: &[(&str, &str)]) -> Resp {
        let owned = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.send("POST", path, &[], Some(Body::Form(owned)))
    }

    /// Opens the authorization page (`query` after `?`): the CSRF cookie as `name=value` for a
    /// `Cookie` header, and its value for the form.
    pub fn authorize_page(&self, query: &str) -> (String, String) {
        let page = self.send("GET", &format!("/oauth/authorize?{query}"), &[], None);
        let cookie = page
            .cookies()
            .iter()
            .find(|c| c.starts_with("coffer_oauth_csrf="))
            .expect("the page sets its CSRF cookie")
            .split(';')
            .next()
            .unwrap()
            .to_string();
        let csrf = cookie.trim_start_matches("coffer_oauth_csrf=").to_string();
        (cookie, csrf)
    }

    /// A browser form post with a cookie.
    pub fn page_post(&self, path: &str, cookie: &str, pairs: &[(&str, &str)]) -> Resp {
        let owned = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.send("POST", path, &[("Cookie", cookie)], Some(Body::Form(owned)))
    }

    /// A token by the password grant of the built-in client.
    pub fn password_token(&self, email: &str, password: &str) -> Value {
        let r = sign_in(self, email, password);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()
    }

    /// The administrator's access token.
    pub fn admin_token(&self) -> String {
        let (e, p) = (
            self.admin.admin_email.clone(),
            self.admin.admin_password.clone(),
        );
        self.password_token(&e, &p)["access_token"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Creates an account directly (as `cofferd user create` does); returns `(id, password)`.
    pub fn user(&self, email: &str, role: Role) -> (String, String) {
        let (u, pw) = coffer_service::identity::accounts::create_user(
            &self.ctx,
            coffer_service::identity::accounts::NewUser {
                email: email.into(),
                name: email.into(),
                password: None,
                role,
                profile: None,
            },
            None,
        )
        .expect("create user");
        (u.id, pw)
    }

    /// Creates an account and returns its access token.
    pub fn user_token(&self, email: &str, role: Role) -> (String, String) {
        let (id, pw) = self.user(email, role);
        let t = self.password_token(email, &pw)["access_token"]
            .as_str()
            .unwrap()
            .to_string();
        (id, t)
    }

    /// Registers a client (as `cofferd client create` does); returns `(client_id, secret)`.
    pub fn client(
        &self,
        input: coffer_service::identity::clients::ClientInput,
    ) -> (String, String) {
        let v = coffer_service::identity::clients::create(
            &self.ctx,
            input,
            coffer_service::identity::clients::Registrar::Operator,
        )
        .expect("create client");
        (v.id, v.client_secret.unwrap())
    }

    /// Reads a stored row count with raw SQL (to check the stored state after a call).
    pub fn count(&self, sql_where: &str, table: &str) -> i64 {
        #[derive(diesel::QueryableByName)]
        struct N {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let sql = format!("SELECT COUNT(*) AS n FROM {table} WHERE {sql_where}");
        self.ctx
            .with_conn(|c| {
                let q = diesel::sql_query(&sql);
                let v: N = coffer_store::db_run!(c => diesel::RunQueryDsl::get_result(q, c))
                    .map_err(coffer_service::Error::internal)?;
                Ok(v.n)
            })
            .expect("count")
    }

    /// Runs raw SQL statements, to set up stored state that HTTP cannot reach (an expired
    /// token, a deactivated account).
    pub fn execute(&self, sql: &str) {
        self.ctx
            .with_conn(|c| {
                coffer_store::batch_execute(c, sql).map_err(coffer_service::Error::internal)
            })
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
}

/// Where a test server keeps file content: the S3 API server of `scripts/s3-test-server.sh`
/// (`COFFER_TEST_S3_URL`, under a prefix of its own) when one is given, else a directory beside
/// the test's database.
pub fn test_storage_url(dir: &std::path::Path) -> Option<String> {
    match std::env::var("COFFER_TEST_S3_URL") {
        Ok(url) if !url.is_empty() => {
            let (path, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
            let prefix = uuid::Uuid::new_v4().simple().to_string();
            Some(format!("{}/{prefix}?{query}", path.trim_end_matches('/')))
        }
        _ => Some(dir.join("storage").display().to_string()),
    }
}

/// Which storage the tests run on: `s3` or `local`.
pub fn storage_name() -> &'static str {
    if std::env::var("COFFER_TEST_S3_URL").is_ok_and(|u| !u.is_empty()) {
        "s3"
    } else {
        "local"
    }
}

/// A `multipart/form-data` body: `(name, filename, bytes)` parts. Returns the content type and
/// the body.
pub fn multipart(parts: &[(&str, Option<&str>, &[u8])]) -> (String, Vec<u8>) {
    let boundary = format!("coffer{}", uuid::Uuid::new_v4().simple());
    let mut body = Vec::new();
    for (name, filename, bytes) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        match filename {
            Some(f) => body.extend_from_slice(
                format!(
                    "Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                )
                .as_bytes(),
            ),
            None => body.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
            ),
        }
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// A request body.
pub enum Body {
    Json(Value),
    Raw(&'static str, String),
    /// Bytes with their content type (a multipart body, see [`multipart`]).
    Bytes(String, Vec<u8>),
    Form(Vec<(String, String)>),
}

/// A client input with the required fields filled in.
pub fn client_input(
    name: &str,
    redirect_uri: &str,
    flow: i32,
) -> coffer_service::identity::clients::ClientInput {
    coffer_service::identity::clients::ClientInput {
        name: name.into(),
        description: format!("{name} test client"),
        redirect_uri: redirect_uri.into(),
        scope: "*".into(),
        flow: Some(flow),
        ..Default::default()
    }
}

// ---- Calls and assertions the areas share ----

/// `Authorization` header value for a bearer token.
pub fn auth(token: &str) -> String {
    format!("Bearer {token}")
}

/// The password grant (`POST /oauth/token`) of the client `(client_id, secret)`, as answered.
pub fn password_grant(
    app: &TestApp,
    (client_id, secret): (&str, &str),
    email: &str,
    password: &str,
) -> Resp {
    app.form(
        "/oauth/token",
        &[
            ("grant_type", "password"),
            ("username", email),
            ("password", password),
            ("client_id", client_id),
            ("client_secret", secret),
        ],
    )
}

/// Signs in by the password grant of the built-in client, as answered (see
/// [`TestApp::password_token`] for the tokens of a sign-in that must succeed).
pub fn sign_in(app: &TestApp, email: &str, password: &str) -> Resp {
    password_grant(
        app,
        (&app.admin.client_id, &app.admin.client_secret),
        email,
        password,
    )
}

/// `GET /rest/users/me`, which must answer 200: the current user.
pub fn me(app: &TestApp, token: &str) -> Value {
    let r = app.rest("GET", "/rest/users/me", token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()
}

/// The id of the caller's "My Folder" (`syncdirId` of `GET /rest/users/me`).
pub fn my_folder(app: &TestApp, token: &str) -> String {
    me(app, token)["syncdirId"].as_str().unwrap().to_string()
}

/// Creates a folder named `name` in `parent`, which must answer 201: its id.
pub fn mkdir(app: &TestApp, token: &str, parent: &str, name: &str) -> String {
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{parent}/folders"),
        token,
        Some(serde_json::json!({"name": name})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    r.json()["id"].as_str().unwrap().to_string()
}

/// A one-shot upload into `folder` that must answer 200: the new file's record.
pub fn upload_ok(app: &TestApp, token: &str, folder: &str, name: &str, bytes: &[u8]) -> Value {
    let r = app.upload(token, folder, name, bytes);
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()
}

/// Asserts a REST error: the status, the `{errors:[{code, message}]}` envelope and the code.
pub fn assert_error(r: &Resp, status: u16, code: &str) {
    assert_eq!(r.status, status, "{}", r.text);
    let body = r.json();
    let first = &body["errors"][0];
    assert_eq!(first["code"], code, "{}", r.text);
    assert!(
        first["message"].as_str().is_some_and(|m| !m.is_empty()),
        "an error carries a message: {}",
        r.text
    );
}

/// The body of a raw message (as a relay receives it, or an `.eml` file of the development
/// relay), decoded from quoted-printable when it is so encoded.
pub fn decoded_body(data: &str) -> String {
    let (head, body) = data.split_once("\r\n\r\n").expect("headers and body");
    let qp = head
        .lines()
        .any(|l| l.eq_ignore_ascii_case("content-transfer-encoding: quoted-printable"));
    if !qp {
        return body.to_string();
    }
    let joined = body.replace("=\r\n", "").replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' && i + 3 <= bytes.len() {
            if let Ok(b) = u8::from_str_radix(&joined[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).expect("UTF-8 body")
}

/// The outbox rows to `to` (mail the server wrote for its senders), oldest first.
pub fn outbox(app: &TestApp, to: &str) -> Vec<coffer_store::mail::OutboxMail> {
    app.ctx
        .with_conn(|c| coffer_store::mail::to_address(c, to).map_err(Into::into))
        .expect("outbox")
}

/// The SMTP server of `scripts/smtp-test-server.sh`: its URL, credentials and the directory it
/// writes each accepted message to.
pub struct Smtp {
    pub url: String,
    pub user: String,
    pub password: String,
    pub dir: std::path::PathBuf,
}

impl AsRef<std::path::Path> for Smtp {
    fn as_ref(&self) -> &std::path::Path {
        &self.dir
    }
}

/// The SMTP test server from `COFFER_TEST_SMTP_*`, or `None` (with a note) when the tests run
/// without one.
pub fn smtp() -> Option<Smtp> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    match (
        var("COFFER_TEST_SMTP_URL"),
        var("COFFER_TEST_SMTP_USER"),
        var("COFFER_TEST_SMTP_PASSWORD"),
        var("COFFER_TEST_SMTP_DIR"),
    ) {
        (Some(url), Some(user), Some(password), Some(dir)) => Some(Smtp {
            url,
            user,
            password,
            dir: dir.into(),
        }),
        _ => {
            eprintln!(
                "skipped: COFFER_TEST_SMTP_URL is unset (run under scripts/smtp-test-server.sh)"
            );
            None
        }
    }
}

/// The message records (`rcptTos`, `data`, `login`, …) the SMTP test server writing to `dir`
/// accepted for `rcpt`.
pub fn received(dir: impl AsRef<std::path::Path>, rcpt: &str) -> Vec<Value> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir.as_ref()).expect("the server's directory") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let v: Value = serde_json::from_str(&text).expect("a message record");
        if v["rcptTos"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str() == Some(rcpt))
        {
            found.push(v);
        }
    }
    found
}
