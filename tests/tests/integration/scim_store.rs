//! The SCIM users listing in SQL (`coffer_store::scim_users`) against the in-memory semantics of
//! `Filter::matches`: for every filter of a table, the users the SQL selects are exactly those
//! whose SCIM resource the filter matches. Also: filters refused up front, keyset paging in every
//! sort order and direction, offsets and counts. Runs on SQLite, and on PostgreSQL when
//! `COFFER_TEST_POSTGRES_URL` is set.

use coffer_domain::scim_filter::{self, Filter};
use coffer_domain::Role;
use coffer_service::{rfc3339, Config, Ctx};
use coffer_store::models::User;
use coffer_store::scim_users::{self, Cursor, SortKey, UserFilter};
use coffer_store::DbConn;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

const USER_URN: &str = "urn:ietf:params:scim:schemas:core:2.0:User";

/// One seeded account.
struct Seed {
    key: &'static str,
    user_name: &'static str,
    email: &'static str,
    name: &'static str,
    external_id: Option<&'static str>,
    language: Option<&'static str>,
    mobile: Option<&'static str>,
    role: &'static str,
    profile_id: i64,
    active: bool,
    deleted: bool,
    created: &'static str,
    updated: &'static str,
}

/// Unix seconds of a `YYYY-MM-DDTHH:MM:SSZ` time (proleptic Gregorian).
fn unix(t: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| t[r].parse::<i64>().expect("digits");
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19)
}

#[rustfmt::skip]
fn seeds() -> Vec<Seed> {
    let s = |key, user_name, email, name, external_id, language, mobile, role, profile_id, active, created, updated| Seed {
        key, user_name, email, name, external_id, language, mobile, role, profile_id, active,
        deleted: false, created, updated,
    };
    vec![
        s("a", "alice@example.com", "alice@example.com", "Alice Smith", Some("ext-Alice"), Some("en"), Some("+41791234567"), "user", 1, true, "2020-05-01T08:00:00Z", "2024-06-01T00:00:00Z"),
        s("b", "Bob_Jones", "bob@example.org", "", None, Some("de-CH"), None, "application-admin", 2, true, "2021-01-15T10:30:00Z", "2021-01-15T10:30:00Z"),
        s("c", "carol%", "carol@example.com", "Carol", Some("EXT-carol"), None, Some("+15550100"), "helpdesk-admin", 1, false, "2021-06-30T23:59:59Z", "2023-02-01T12:00:00Z"),
        s("d", "dave", "dave@test.net", "Dave O'Brien", Some("42"), Some("fr"), None, "user", 1, true, "2022-01-01T00:00:00Z", "2022-01-01T00:00:00Z"),
        s("e", "Eve", "eve@example.com", "eve", None, Some("EN-us"), Some("+4915112345"), "application-admin", 2, false, "2022-01-01T00:00:00Z", "2024-06-01T00:00:00Z"),
        s("f", "frank@EXAMPLE.com", "frank@example.com", "Frank", Some("ext-frank"), None, None, "user", 2, true, "2022-07-04T12:00:00Z", "2022-08-01T09:15:00Z"),
        s("g", "grace", "grace@example.net", "Grace Hopper", Some(""), Some("de"), Some(""), "user", 1, true, "2023-03-03T03:03:03Z", "2023-03-03T03:03:03Z"),
        s("h", "h\\eidi", "heidi@example.com", "Heidi", Some("ext-heidi"), Some("de-AT"), None, "helpdesk-admin", 1, false, "2023-05-05T05:05:05Z", "2024-01-01T00:00:00Z"),
        s("i", "ivan", "ivan@sub.example.com", "Ivan Ivanov", Some("IVAN"), Some("de"), Some("+7"), "helpdesk-admin", 1, true, "2023-11-11T11:11:11Z", "2023-11-12T00:00:00Z"),
        // A system administrator: never listed by SCIM.
        s("s", "root", "root@example.com", "Root", Some("ext-root"), Some("en"), Some("+41"), "system-admin", 1, true, "2022-06-01T00:00:00Z", "2024-06-02T00:00:00Z"),
        s("j", "judy", "judy@example.com", "alice smith", None, None, None, "user", 2, true, "2024-02-29T12:00:00Z", "2024-02-29T12:00:00Z"),
        Seed { deleted: true, ..s("m", "mallory", "mallory@example.com", "Mallory", Some("ext-mallory"), Some("en"), Some("+1"), "system-admin", 1, true, "2024-03-01T00:00:00Z", "2024-03-02T00:00:00Z") },
        s("n", "Niaj", "niaj@example.com", "NIAJ", Some("niaj"), Some("en"), None, "user", 1, false, "2024-04-01T00:00:00Z", "2024-06-01T00:00:00Z"),
        s("o", "oscar", "oscar@example.org", "Oscar", Some("ext-oscar"), Some("pt-BR"), Some("+351"), "helpdesk-admin", 2, true, "2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z"),
    ]
}

struct Seeded {
    key: &'static str,
    user: User,
    profile: &'static str,
    /// The user's SCIM resource, as `GET /Users/{id}` answers it (less `location`/`version`).
    json: Value,
}

fn resource(u: &User, profile: &str) -> Value {
    let mut r = Map::new();
    r.insert("schemas".into(), json!([USER_URN]));
    r.insert("id".into(), json!(u.id));
    if let Some(x) = &u.external_id {
        r.insert("externalId".into(), json!(x));
    }
    r.insert(
        "userName".into(),
        json!(u.user_name.as_deref().unwrap_or(&u.email)),
    );
    if !u.name.is_empty() {
        r.insert("displayName".into(), json!(u.name));
    }
    r.insert("userType".into(), json!(profile));
    if let Some(x) = &u.preferred_language {
        r.insert("preferredLanguage".into(), json!(x));
    }
    r.insert("active".into(), json!(u.active));
    r.insert(
        "emails".into(),
        json!([{"value": u.email, "type": "work", "primary": true}]),
    );
    if let Some(n) = &u.mobile_number {
        r.insert(
            "phoneNumbers".into(),
            json!([{"value": n, "type": "mobile", "primary": true}]),
        );
    }
    if u.role != "user" {
        r.insert("roles".into(), json!([{"value": u.role}]));
    }
    r.insert(
        "meta".into(),
        json!({
            "resourceType": "User",
            "created": rfc3339(u.created_at),
            "lastModified": rfc3339(u.updated_at),
        }),
    );
    Value::Object(r)
}

/// A fresh database with the seeds. Fields drop in order: the pool before the database.
struct Fixture {
    ctx: Ctx,
    users: Vec<Seeded>,
    _pg: Option<coffer_tests::PgDatabase>,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with(seeds())
    }

    fn with(seeds: Vec<Seed>) -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let (url, pg) = coffer_tests::fresh_database(dir.path());
        let ctx = coffer_service::open(&url, 4, Config::new("http://127.0.0.1:8080", "Coffer"))
            .expect("open database");
        let mut users = Vec::new();
        {
            let mut conn = ctx.db.get().expect("connection");
            for s in seeds {
                let role: Role = s.role.parse().expect("a role");
                let user = User {
                    active: s.active,
                    deleted: s.deleted,
                    mobile_number: s.mobile.map(Into::into),
                    updated_at: unix(s.updated),
                    user_name: Some(s.user_name.into()),
                    external_id: s.external_id.map(Into::into),
                    preferred_language: s.language.map(Into::into),
                    ..coffer_service::identity::accounts::new_user_row(
                        s.email,
                        s.name,
                        None,
                        role,
                        s.profile_id,
                        unix(s.created),
                    )
                };
                coffer_store::users::insert(&mut conn, &user).expect("insert user");
                let profile = if s.profile_id == 1 {
                    "Standard"
                } else {
                    "Restricted"
                };
                // The helper's own arithmetic agrees with the server's formatting.
                assert_eq!(rfc3339(user.created_at), s.created);
                let json = resource(&user, profile);
                users.push(Seeded {
                    key: s.key,
                    user,
                    profile,
                    json,
                });
            }
        }
        Fixture {
            ctx,
            users,
            _pg: pg,
            _dir: dir,
        }
    }

    fn conn(&self) -> coffer_store::PooledConn {
        self.ctx.db.get().expect("connection")
    }

    fn user(&self, key: &str) -> &User {
        &self
            .users
            .iter()
            .find(|u| u.key == key)
            .expect("seeded key")
            .user
    }

    fn listed(&self) -> impl Iterator<Item = &Seeded> {
        // SCIM leaves deleted users and system administrators out.
        self.users
            .iter()
            .filter(|u| !u.user.deleted && u.user.role != "system-admin")
    }

    /// The keys of the listed users `filter` matches in memory.
    fn expected(&self, filter: &Filter) -> BTreeSet<&'static str> {
        self.listed()
            .filter(|u| filter.matches(&u.json))
            .map(|u| u.key)
            .collect()
    }

    /// The keys of the users the SQL selects, from one big chunk; checks `count` on the way.
    fn selected(&self, conn: &mut DbConn, filter: &UserFilter) -> BTreeSet<&'static str> {
        let (rows, cursor) =
            scim_users::chunk(conn, Some(filter), SortKey::Id, false, None, 0, 1000)
                .expect("chunk");
        assert!(cursor.is_none());
        let count = scim_users::count(conn, Some(filter)).expect("count");
        assert_eq!(count, rows.len() as i64);
        rows.iter()
            .map(|(user, profile)| {
                let seeded = self
                    .users
                    .iter()
                    .find(|u| u.user.id == user.id)
                    .expect("a seeded user");
                assert_eq!(profile, seeded.profile);
                seeded.key
            })
            .collect()
    }
}

fn parse(input: &str) -> Filter {
    scim_filter::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"))
}

fn translate(input: &str) -> UserFilter {
    scim_users::translate(&parse(input)).unwrap_or_else(|e| panic!("{input}: {e}"))
}

fn keys(s: &str) -> BTreeSet<&str> {
    s.split_whitespace().collect()
}

#[test]
fn filters_select_what_matches_selects() {
    let fx = Fixture::new();
    let mut conn = fx.conn();
    let id = |k: &str| fx.user(k).id.clone();
    let created = |k: &str| rfc3339(fx.user(k).created_at);
    let updated = |k: &str| rfc3339(fx.user(k).updated_at);
    let cases: Vec<String> = [
        // userName: case-insensitive names and values, LIKE wildcards taken literally.
        r#"userName eq "alice@example.com""#,
        r#"USERNAME eq "BOB_JONES""#,
        r#"userName ne "dave""#,
        r#"userName co "EXAMPLE""#,
        r#"userName sw "b""#,
        r#"userName ew ".COM""#,
        r#"userName co "%""#,
        r#"userName co "_""#,
        r#"userName co "\\""#,
        r#"userName sw "h\\e""#,
        r#"userName co """#,
        r#"userName gt "dave""#,
        r#"userName ge "DAVE""#,
        r#"userName lt "Carol""#,
        r#"userName le "carol%""#,
        r#"userName pr"#,
        r#"userName eq null"#,
        r#"userName ne null"#,
        // externalId, where case does not decide (see `case_exact_attributes` for where it does).
        r#"externalId eq "ext-Alice""#,
        r#"externalId pr"#,
        r#"externalId eq null"#,
        r#"externalId ne null"#,
        r#"externalId eq """#,
        r#"externalId ne "42""#,
        r#"externalId sw "ext-f""#,
        r#"externalId co "-""#,
        r#"externalId ew "oscar""#,
        r#"externalId lt "5""#,
        // displayName: "" is no name at all.
        r#"displayName pr"#,
        r#"displayName eq null"#,
        r#"displayName eq """#,
        r#"displayName ne """#,
        r#"displayName co "SMITH""#,
        r#"displayName eq "alice smith""#,
        r#"displayName ne "eve""#,
        r#"displayName co "'""#,
        r#"displayName ge "i""#,
        // userType from the profile.
        r#"userType eq "restricted""#,
        r#"userType ne "Standard""#,
        r#"userType sw "STA""#,
        r#"userType pr"#,
        // preferredLanguage.
        r#"preferredLanguage eq "en""#,
        r#"preferredLanguage sw "de""#,
        r#"preferredLanguage eq "en-US""#,
        r#"preferredLanguage eq null"#,
        r#"preferredLanguage ne "en""#,
        r#"preferredLanguage gt "de""#,
        r#"preferredLanguage le "de-ch""#,
        r#"preferredLanguage ew "-at""#,
        // active.
        r#"active eq true"#,
        r#"active eq false"#,
        r#"active ne true"#,
        r#"active pr"#,
        r#"active eq null"#,
        r#"active ne null"#,
        // emails, one per user, stored lowercase.
        r#"emails co "example.com""#,
        r#"emails.value ew ".ORG""#,
        r#"emails.value eq "ALICE@EXAMPLE.COM""#,
        r#"emails ne "dave@test.net""#,
        r#"emails.value gt "j""#,
        r#"emails.type eq "work""#,
        r#"emails.type eq "WORK""#,
        r#"emails.type ne "work""#,
        r#"emails.type sw "w""#,
        r#"emails.type eq null"#,
        r#"emails.primary eq true"#,
        r#"emails.primary eq false"#,
        r#"emails.primary ne false"#,
        r#"emails pr"#,
        r#"emails.value pr"#,
        r#"emails eq null"#,
        r#"emails[type eq "work" and value sw "a"]"#,
        r#"emails[value co "example" or primary eq false]"#,
        r#"emails[not (value ew ".com")]"#,
        r#"emails[type eq "home"]"#,
        // phoneNumbers: present with a number only (grace's is empty, but there).
        r#"phoneNumbers pr"#,
        r#"phoneNumbers eq null"#,
        r#"phoneNumbers eq """#,
        r#"phoneNumbers.value pr"#,
        r#"phoneNumbers.value sw "+4""#,
        r#"phoneNumbers ne "+7""#,
        r#"phoneNumbers.value gt "+3""#,
        r#"phoneNumbers.type eq "mobile""#,
        r#"phoneNumbers.type eq "MOBILE""#,
        r#"phoneNumbers.type ne "mobile""#,
        r#"phoneNumbers.type eq null"#,
        r#"phoneNumbers.type pr"#,
        r#"phoneNumbers.type co "ob""#,
        r#"phoneNumbers.primary eq true"#,
        r#"phoneNumbers.primary ne true"#,
        r#"phoneNumbers.primary eq null"#,
        r#"phoneNumbers[type eq "mobile" and value co "49"]"#,
        r#"phoneNumbers[primary eq true or value eq "+7"]"#,
        r#"not (phoneNumbers[primary eq true])"#,
        r#"phoneNumbers[not (value pr)]"#,
        // roles: none for an ordinary user.
        r#"roles pr"#,
        r#"roles eq null"#,
        r#"roles eq "SYSTEM-ADMIN""#,
        r#"roles.value sw "HELP""#,
        r#"roles.value ne "system-admin""#,
        r#"roles[value ew "admin"]"#,
        r#"roles[not (value eq "helpdesk-admin")]"#,
        // meta.
        r#"meta pr"#,
        r#"meta.resourceType eq "User""#,
        r#"meta.resourceType eq "user""#,
        r#"meta.resourceType ne "Group""#,
        r#"meta.resourceType co "se""#,
        r#"meta.created gt "2022-01-01T00:00:00Z""#,
        r#"meta.created ge "2022-01-01T00:00:00Z""#,
        r#"meta.created lt "2022-01-01T00:00:00Z""#,
        r#"meta.created le "2022-01-01T00:00:00Z""#,
        r#"meta.created eq null"#,
        r#"meta.created pr"#,
        r#"meta.lastModified ge "2024-06-01T00:00:00Z""#,
        r#"meta.lastModified lt "2021-06-30T23:59:59Z""#,
        r#"META.LASTMODIFIED ne "2024-06-01T00:00:00Z""#,
        r#"meta.created gt "2023-03-03t03:03:02z""#,
        // Schema URN prefixes.
        r#"urn:ietf:params:scim:schemas:core:2.0:User:userName sw "a""#,
        r#"URN:IETF:PARAMS:SCIM:SCHEMAS:CORE:2.0:USER:emails[type eq "work" and value ew ".org"]"#,
        r#"urn:ietf:params:scim:schemas:core:2.0:User:meta.created gt "2023-01-01T00:00:00Z""#,
        r#"urn:ietf:params:scim:schemas:core:2.0:User:phoneNumbers.type eq "mobile""#,
        // Logic: `and` binds tighter than `or`; parentheses; `not`.
        r#"userName sw "a" or userName sw "b" and active eq false"#,
        r#"(userName sw "a" or userName sw "b") and active eq true"#,
        r#"userName sw "a" or (userName sw "b" and active eq false)"#,
        r#"not (active eq true) or roles pr"#,
        r#"not (displayName pr and preferredLanguage pr)"#,
        r#"not (not (phoneNumbers pr))"#,
        r#"userType eq "Standard" and not (roles pr) and emails co "example""#,
        r#"not (preferredLanguage eq "en") and not (externalId pr)"#,
        r#"not (emails.type eq "work") or displayName eq null"#,
        r#"active eq true and (roles eq "system-admin" or phoneNumbers pr) and not (userType eq "Restricted")"#,
        r#"not (userName eq null or emails.primary eq false)"#,
    ]
    .into_iter()
    .map(str::to_string)
    .chain([
        format!(r#"id eq "{}""#, id("c")),
        format!(r#"id eq "{}""#, id("c").to_uppercase()),
        format!(r#"id ne "{}""#, id("a")),
        format!(r#"id sw "{}""#, &id("e")[..8]),
        format!(r#"id gt "{}""#, id("f")),
        r#"id co "-""#.to_string(),
        format!(r#"id eq "{}""#, id("m")),
        format!(r#"meta.created eq "{}""#, created("d")),
        format!(r#"meta.created ne "{}""#, created("d")),
        format!(r#"meta.lastModified eq "{}""#, updated("a")),
        format!(r#"meta.lastModified le "{}""#, updated("g")),
        format!(r#"meta.created gt "{}" and meta.created lt "{}""#, created("b"), created("h")),
    ])
    .collect();
    assert!(cases.len() >= 40);
    let mut nonempty = 0;
    for input in &cases {
        let filter = parse(input);
        let expected = fx.expected(&filter);
        let translated = scim_users::translate(&filter).unwrap_or_else(|e| panic!("{input}: {e}"));
        let selected = fx.selected(&mut conn, &translated);
        assert_eq!(
            selected,
            expected,
            "{input} ({}): SQL selected the left, matches the right",
            coffer_tests::backend_name()
        );
        if !expected.is_empty() && expected.len() < 12 {
            nonempty += 1;
        }
    }
    // The table discriminates: most filters select some users but not all.
    assert!(
        nonempty * 3 >= cases.len() * 2,
        "{nonempty} of {}",
        cases.len()
    );
}

#[test]
fn user_names_ignore_the_case_of_every_letter() {
    let seed = |key, user_name, email| Seed {
        key,
        user_name,
        email,
        name: "",
        external_id: None,
        language: None,
        mobile: None,
        role: "user",
        profile_id: 1,
        active: true,
        deleted: false,
        created: "2024-01-01T00:00:00Z",
        updated: "2024-01-01T00:00:00Z",
    };
    let fx = Fixture::with(vec![
        seed("u", "Ünal@Example.com", "uenal@example.com"),
        seed("z", "zoë", "zoe@example.com"),
        seed("a", "anna", "anna@example.com"),
    ]);
    let mut conn = fx.conn();
    // Folded by Coffer, not by the database (SQLite's lower() folds ASCII letters only): every
    // letter's case is ignored on both backends, in equality, prefixes, ranges and sorting.
    for (filter, want) in [
        (r#"userName eq "Ünal@Example.com""#, "u"),
        (r#"userName eq "ünal@example.com""#, "u"),
        (r#"userName eq "ÜNAL@EXAMPLE.COM""#, "u"),
        (r#"userName eq "zoë""#, "z"),
        (r#"userName eq "ZOË""#, "z"),
        (r#"userName ne "ünal@example.com""#, "a z"),
        (r#"userName sw "ün""#, "u"),
        (r#"userName sw "ÜN""#, "u"),
        (r#"userName co "OË""#, "z"),
        (r#"userName gt "zoa""#, "u z"),
    ] {
        assert_eq!(
            fx.selected(&mut conn, &translate(filter)),
            keys(want),
            "{filter}"
        );
    }
    for (name, want) in [
        ("Ünal@Example.com", Some("u")),
        ("ünal@example.com", Some("u")),
        ("ZOË", Some("z")),
        ("anne", None),
    ] {
        let found = coffer_store::users::by_user_name(&mut conn, name).expect("lookup");
        assert_eq!(
            found.map(|u| u.id),
            want.map(|k| fx.user(k).id.clone()),
            "{name}"
        );
    }
}

#[test]
fn case_exact_attributes_and_instants() {
    let fx = Fixture::new();
    let mut conn = fx.conn();
    // `id` and `externalId` are caseExact, in `co`/`sw`/`ew` and ordering too.
    let a = fx.user("a").id.clone();
    let cases: Vec<(String, &str)> = vec![
        (r#"externalId eq "ext-alice""#.into(), ""),
        (r#"externalId eq "ext-Alice""#.into(), "a"),
        (
            r#"externalId ne "EXT-ALICE""#.into(),
            "a b c d e f g h i j n o",
        ),
        (r#"externalId co "ext""#.into(), "a f h o"),
        (r#"externalId co "XT-""#.into(), "c"),
        (r#"externalId sw "EXT""#.into(), "c"),
        (r#"externalId ew "IVAN""#.into(), "i"),
        (r#"externalId ew "ivan""#.into(), ""),
        (r#"externalId gt "a""#.into(), "a f h n o"),
        (r#"externalId le "IVAN""#.into(), "c d g i"),
        (
            r#"externalId co "" and not (externalId sw "e")"#.into(),
            "c d g i n",
        ),
        (format!(r#"id co "{}""#, a[1..].to_uppercase()), ""),
        (format!(r#"id ew "{}""#, &a[20..]), "a"),
        // Date-times are compared as instants: offsets and fractions count.
        (
            r#"meta.created eq "2022-01-01T01:00:00+01:00""#.into(),
            "d e",
        ),
        (
            r#"meta.created eq "2021-12-31T19:00:00-05:00""#.into(),
            "d e",
        ),
        (
            r#"meta.created eq "2022-01-01T00:00:00.000Z""#.into(),
            "d e",
        ),
        (r#"meta.created eq "2022-01-01T00:00:00.5Z""#.into(), ""),
        (
            r#"meta.created ne "2022-01-01T00:00:00.5Z""#.into(),
            "a b c d e f g h i j n o",
        ),
        (
            r#"meta.created gt "2021-12-31T23:59:59.999Z""#.into(),
            "d e f g h i j n o",
        ),
        (
            r#"meta.created ge "2021-12-31T23:59:59.999Z""#.into(),
            "d e f g h i j n o",
        ),
        (
            r#"meta.created lt "2022-01-01T00:00:00.001Z""#.into(),
            "a b c d e",
        ),
        (
            r#"meta.created le "2021-12-31T23:59:59.999Z""#.into(),
            "a b c",
        ),
        (r#"meta.created lt "2022-01-01T00:00:00Z""#.into(), "a b c"),
        (
            r#"meta.lastModified gt "2024-06-01T01:59:59+02:00""#.into(),
            "a e n o",
        ),
    ];
    for (input, want) in &cases {
        let selected = fx.selected(&mut conn, &translate(input));
        assert_eq!(selected, keys(want), "{input}");
    }
}

#[test]
fn refuses_filters_that_do_not_fit_users() {
    let cases = [
        r#"foo eq "x""#,
        r#"name.givenName eq "x""#,
        r#"schemas eq "x""#,
        r#"title pr"#,
        r#"userName.value eq "x""#,
        r#"emails.display eq "x""#,
        r#"emails[display pr]"#,
        r#"roles.primary eq true"#,
        r#"phoneNumbers.display pr"#,
        r#"active gt "x""#,
        r#"active le "2""#,
        r#"active sw "t""#,
        r#"active eq "true""#,
        r#"active eq 1"#,
        r#"emails.primary co "x""#,
        r#"emails.primary eq "true""#,
        r#"phoneNumbers[primary ge "x"]"#,
        r#"emails.type eq true"#,
        r#"userName eq 5"#,
        r#"userName gt 5"#,
        r#"displayName eq false"#,
        r#"id eq 1"#,
        r#"meta.created co "2022""#,
        r#"meta.created sw "2022""#,
        r#"meta.created eq "2022-01-01""#,
        r#"meta.created gt "not a date""#,
        r#"meta.lastModified lt "2022-02-30T00:00:00Z""#,
        r#"meta.created gt 1700000000"#,
        r#"meta.created eq true"#,
        r#"meta.location eq "x""#,
        r#"meta.version eq "W/\"1\"""#,
        r#"meta.location pr"#,
        r#"meta eq "x""#,
        r#"meta[created pr]"#,
        r#"userName[value pr]"#,
        r#"active[value eq true]"#,
        r#"password pr"#,
        r#"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber eq "1""#,
        r#"urn:ietf:params:scim:schemas:core:2.0:Group:displayName pr"#,
        r#"userName pr and not (foo pr)"#,
        r#"active eq true or emails[value eq 1]"#,
    ];
    for input in cases {
        let filter = parse(input);
        match scim_users::translate(&filter) {
            Ok(f) => panic!("{input}: translated as {f:?}"),
            Err(detail) => assert!(!detail.is_empty() && detail.len() < 300, "{detail}"),
        }
    }
}

/// The sort value of a seeded user as the listing orders it: lowercased unless caseExact,
/// missing as "".
fn sort_value(u: &Seeded, sort: SortKey) -> (i64, String) {
    let user = &u.user;
    let text = |s: Option<&str>| (0, s.unwrap_or_default().to_lowercase());
    match sort {
        SortKey::Created => (user.created_at, String::new()),
        SortKey::LastModified => (user.updated_at, String::new()),
        SortKey::Active => (i64::from(user.active), String::new()),
        SortKey::Id => (0, user.id.clone()),
        SortKey::ExternalId => (0, user.external_id.clone().unwrap_or_default()),
        SortKey::UserName => text(user.user_name.as_deref()),
        SortKey::DisplayName => text(Some(&user.name)),
        SortKey::UserType => text(Some(u.profile)),
        SortKey::PreferredLanguage => text(user.preferred_language.as_deref()),
        SortKey::Email => (0, user.email.clone()),
    }
}

fn ids(rows: &[(User, String)]) -> Vec<String> {
    rows.iter().map(|(u, _)| u.id.clone()).collect()
}

/// Reads a whole listing in chunks of `size`.
fn paged(
    conn: &mut DbConn,
    filter: Option<&UserFilter>,
    sort: SortKey,
    descending: bool,
    size: i64,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut after: Option<Cursor> = None;
    for _ in 0..100 {
        let (rows, next) =
            scim_users::chunk(conn, filter, sort, descending, after.as_ref(), 0, size)
                .expect("chunk");
        assert!(rows.len() as i64 <= size);
        assert_eq!(next.is_some(), rows.len() as i64 == size);
        out.extend(ids(&rows));
        match next {
            Some(c) => after = Some(c),
            None => return out,
        }
    }
    panic!("paging does not end");
}

#[test]
fn keyset_paging_offsets_and_counts() {
    let fx = Fixture::new();
    let mut conn = fx.conn();
    let active = translate("active eq true or roles pr");
    for filter in [None, Some(&active)] {
        for sort in SortKey::ALL {
            for descending in [false, true] {
                let (all, cursor) =
                    scim_users::chunk(&mut conn, filter, sort, descending, None, 0, 1000)
                        .expect("chunk");
                assert!(cursor.is_none());
                let all = ids(&all);
                // The order is (sort value, id), as Rust orders the seeds.
                let mut want: Vec<&Seeded> = fx
                    .listed()
                    .filter(|u| {
                        filter.is_none() || parse("active eq true or roles pr").matches(&u.json)
                    })
                    .collect();
                want.sort_by(|x, y| {
                    (sort_value(x, sort), &x.user.id).cmp(&(sort_value(y, sort), &y.user.id))
                });
                if descending {
                    want.reverse();
                }
                let want: Vec<String> = want.iter().map(|u| u.user.id.clone()).collect();
                assert_eq!(
                    all, want,
                    "{sort:?} descending={descending} filter={filter:?}"
                );
                for size in [1, 3, 5] {
                    assert_eq!(
                        paged(&mut conn, filter, sort, descending, size),
                        all,
                        "{sort:?} descending={descending} size={size}"
                    );
                }
            }
        }
    }

    // Counts.
    assert_eq!(scim_users::count(&mut conn, None).unwrap(), 12);
    assert_eq!(scim_users::count(&mut conn, Some(&active)).unwrap(), 11);
    let never = translate(r#"meta.resourceType eq "Group""#);
    assert_eq!(never.constant(), Some(false));
    assert_eq!(scim_users::count(&mut conn, Some(&never)).unwrap(), 0);
    let (rows, cursor) = scim_users::chunk(
        &mut conn,
        Some(&never),
        SortKey::Created,
        false,
        None,
        0,
        10,
    )
    .unwrap();
    assert!(rows.is_empty() && cursor.is_none());
    let always = translate(r#"emails.type eq "work""#);
    assert_eq!(always.constant(), Some(true));
    assert_eq!(scim_users::count(&mut conn, Some(&always)).unwrap(), 12);

    // Offsets (startIndex - 1) apply to the first chunk only.
    let (all, _) =
        scim_users::chunk(&mut conn, None, SortKey::Created, false, None, 0, 1000).unwrap();
    let all = ids(&all);
    let (rows, cursor) =
        scim_users::chunk(&mut conn, None, SortKey::Created, false, None, 2, 3).unwrap();
    assert_eq!(ids(&rows), all[2..5]);
    let (rows, _) = scim_users::chunk(
        &mut conn,
        None,
        SortKey::Created,
        false,
        cursor.as_ref(),
        100,
        3,
    )
    .unwrap();
    assert_eq!(ids(&rows), all[5..8]);
    let (rows, cursor) =
        scim_users::chunk(&mut conn, None, SortKey::Created, false, None, 10, 5).unwrap();
    assert_eq!(ids(&rows), all[10..]);
    assert!(cursor.is_none());
    let (rows, cursor) =
        scim_users::chunk(&mut conn, None, SortKey::Created, false, None, 50, 5).unwrap();
    assert!(rows.is_empty() && cursor.is_none());
    let (rows, cursor) =
        scim_users::chunk(&mut conn, None, SortKey::Created, false, None, 0, 0).unwrap();
    assert!(rows.is_empty() && cursor.is_none());

    // Users created in the same second keep a stable order, by id.
    let d = fx.user("d").id.clone();
    let e = fx.user("e").id.clone();
    let pos = |id: &str| all.iter().position(|x| x == id).unwrap();
    assert_eq!(pos(&d).abs_diff(pos(&e)), 1);
    assert_eq!(pos(&d) < pos(&e), d < e);

    // A cursor belongs to its sort order.
    let (_, cursor) =
        scim_users::chunk(&mut conn, None, SortKey::Created, false, None, 0, 2).unwrap();
    assert!(scim_users::chunk(
        &mut conn,
        None,
        SortKey::Email,
        false,
        cursor.as_ref(),
        0,
        2
    )
    .is_err());
}
