//! The OpenAPI document is complete (every operation states its parameters, bodies and error
//! statuses with their envelopes), and what the fuzzer (scripts/openapi-fuzz.sh) found stays
//! fixed: 405 answers name the allowed methods, and no offset overflows the page number.

use coffer_tests::{Body, TestApp};
use serde_json::{json, Value};
use std::collections::HashSet;

fn document(app: &TestApp) -> Value {
    let r = app.send("GET", "/openapi.json", &[], None);
    assert_eq!(r.status, 200);
    r.json()
}

fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            out.push((method.clone(), path.clone(), op.clone()));
        }
    }
    out
}

#[test]
fn every_operation_declares_its_parameters_bodies_and_errors() {
    let app = TestApp::spawn();
    let doc = document(&app);
    let ops = operations(&doc);
    assert!(ops.len() >= 70, "{}", ops.len());
    let mut ids = HashSet::new();
    for (method, path, op) in &ops {
        let name = format!("{method} {path}");
        assert!(
            ids.insert(op["operationId"].as_str().unwrap().to_string()),
            "{name}: operationId not unique"
        );
        let responses = op["responses"].as_object().unwrap();
        assert!(responses.contains_key("490"), "{name}: no 490");
        for (status, r) in responses {
            let error = status.as_str() >= "400";
            if error {
                assert!(
                    r.pointer("/content").is_some_and(|c| c
                        .as_object()
                        .unwrap()
                        .values()
                        .all(|m| m.get("schema").is_some())),
                    "{name} {status}: an error without a body schema"
                );
            }
        }
        let success_bodies = responses
            .iter()
            .filter(|(s, r)| s.starts_with('2') && r.get("content").is_some())
            .count();
        let empty_success = responses
            .iter()
            .any(|(s, r)| s.starts_with('2') && r.get("content").is_none());
        let redirect = responses.keys().any(|s| s.starts_with('3'));
        assert!(
            success_bodies > 0 || empty_success || redirect,
            "{name}: no success response"
        );
        if op.get("requestBody").is_some() {
            assert!(responses.contains_key("408"), "{name}: no 408");
        }
        if let Some(body) = op.get("requestBody") {
            for media in body["content"].as_object().unwrap().values() {
                let schema = &media["schema"];
                assert!(
                    schema.get("$ref").is_some() || schema.get("properties").is_some(),
                    "{name}: a free-form request body {schema}"
                );
            }
        }
        let rest = path.starts_with("/rest/") && !path.starts_with("/rest/scim");
        let version = op["parameters"].as_array().and_then(|ps| {
            ps.iter()
                .find(|p| p["in"] == "header" && p["name"] == "X-Coffer-Version")
        });
        if rest {
            let v = version.unwrap_or_else(|| panic!("{name}: no version header"));
            assert_eq!(v["required"], true, "{name}");
            assert_eq!(v["schema"]["enum"], json!(["28"]), "{name}");
            assert!(responses.contains_key("400"), "{name}: no 400");
        } else {
            assert!(version.is_none(), "{name}: a version header outside /rest");
        }
        if op.get("security").is_some() {
            assert!(responses.contains_key("401"), "{name}: no 401");
        }
    }
    // Shared envelopes are components, named once.
    let schemas = &doc["components"]["schemas"];
    for name in [
        "RestErrors",
        "OAuthErrorBody",
        "ScimErrorBody",
        "WebhookErrorBody",
        "DeviceView",
        "ClientView",
    ] {
        assert!(schemas.get(name).is_some(), "{name}");
    }
    assert_eq!(
        schemas["RestErrors"]["required"],
        json!(["errors"]),
        "{}",
        schemas["RestErrors"]
    );
    // A list operation's query parameters come from its grammar.
    let devices = &doc["paths"]["/rest/devices"]["get"]["parameters"];
    let names: Vec<&str> = devices
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for p in [
        "installTagId",
        "installTagId:contains",
        "userId:in",
        "orderBy",
        "offset",
        "limit",
        "mode",
    ] {
        assert!(names.contains(&p), "{p} in {names:?}");
    }
    let limit = devices
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .unwrap();
    assert_eq!(limit["schema"]["maximum"], 10_000);
    assert_eq!(limit["schema"]["minimum"], 1);
    // The list envelope and the record are real schemas.
    let list = &doc["paths"]["/rest/devices"]["get"]["responses"]["200"]["content"]
        ["application/json"]["schema"];
    let list = if let Some(r) = list.get("$ref") {
        let name = r.as_str().unwrap().rsplit('/').next().unwrap();
        schemas[name].clone()
    } else {
        list.clone()
    };
    for f in ["data", "total", "page", "pageSize"] {
        assert!(list["properties"].get(f).is_some(), "{f} in {list}");
    }
}

#[test]
fn the_document_names_the_configured_version_header() {
    let app = TestApp::builder()
        .config(|c| c.version_brand = "Acme".into())
        .spawn();
    let doc = document(&app);
    let params = doc["paths"]["/rest/users/me"]["get"]["parameters"].clone();
    assert!(
        params
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "X-Acme-Version" && p["required"] == true),
        "{params}"
    );
}

#[test]
fn method_not_allowed_names_the_allowed_methods_in_every_area() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let auth = format!("Bearer {t}");
    let allow = |r: &coffer_tests::Resp| -> Vec<String> {
        let mut m: Vec<String> = r
            .header("allow")
            .unwrap_or_else(|| panic!("no Allow: {:?}", r.headers))
            .split(',')
            .map(|s| s.trim().to_string())
            .collect();
        m.sort();
        m
    };

    let r = app.rest("PATCH", "/rest/locations", &t, None);
    assert_eq!(r.status, 405);
    assert_eq!(r.code(), "ERR_REQUEST_METHOD_NOT_ALLOWED");
    assert_eq!(allow(&r), ["GET", "POST"]);

    let r = app.send("PATCH", "/webhooks", &[("Authorization", &auth)], None);
    assert_eq!(r.status, 405);
    assert_eq!(r.json()["code"], 405);
    assert_eq!(allow(&r), ["GET", "POST"]);

    let r = app.send(
        "POST",
        "/rest/scim/Schemas",
        &[("Authorization", "Bearer x")],
        None,
    );
    assert_eq!(r.status, 405);
    assert_eq!(r.json()["status"], "405");
    assert_eq!(allow(&r), ["GET"]);

    let r = app.send("DELETE", "/health", &[], None);
    assert_eq!(r.status, 405);
    assert_eq!(allow(&r), ["GET"]);

    let r = app.send(
        "PUT",
        "/oauth/token",
        &[],
        Some(Body::Form(vec![("grant_type".into(), "password".into())])),
    );
    assert_eq!(r.status, 405);
    assert_eq!(allow(&r), ["POST"]);
}

#[test]
fn the_largest_offset_pages_without_overflow() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    for path in [
        "/rest/clients?offset=9223372036854775807&limit=1",
        "/rest/devices?offset=9223372036854775807&limit=1",
    ] {
        let r = app.rest("GET", path, &t, None);
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        let v = r.json();
        assert_eq!(v["data"], json!([]), "{path}");
        assert_eq!(v["page"], json!(i64::MAX), "{path}");
        assert_eq!(v["pageSize"], 1, "{path}");
    }
    let r = app.rest(
        "GET",
        "/rest/locations?offset=9223372036854775807",
        &t,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["data"], json!([]));
}

#[test]
fn every_operation_has_a_summary_a_description_and_its_error_codes() {
    let app = TestApp::spawn();
    let doc = document(&app);
    let mut summaries = HashSet::new();
    for (method, path, op) in operations(&doc) {
        let name = format!("{method} {path}");
        let summary = op["summary"].as_str().unwrap_or_default();
        let description = op["description"].as_str().unwrap_or_default();
        assert!(!summary.trim().is_empty(), "{name}: no summary");
        assert!(
            description.len() > summary.len(),
            "{name}: no description beyond the summary"
        );
        assert!(
            summaries.insert(summary.to_string()),
            "{name}: summary {summary:?} is another operation's"
        );
        for (status, r) in op["responses"].as_object().unwrap() {
            if status.as_str() < "400" {
                continue;
            }
            let envelope = r["content"]
                .as_object()
                .and_then(|c| c.values().next())
                .and_then(|m| m["schema"]["$ref"].as_str())
                .unwrap_or_default();
            let coded = ["RestErrors", "RestBadRequest", "OAuthErrorBody"]
                .iter()
                .any(|e| envelope.ends_with(&format!("/{e}")));
            if !coded {
                continue;
            }
            let codes = r["x-error-codes"]
                .as_array()
                .unwrap_or_else(|| panic!("{name} {status}: no x-error-codes in {r}"));
            assert!(!codes.is_empty(), "{name} {status}: no codes");
            let text = r["description"].as_str().unwrap();
            for c in codes {
                let c = c.as_str().unwrap();
                assert!(
                    text.contains(&format!("`{c}`")),
                    "{name} {status}: {c} is not in the description {text:?}"
                );
            }
        }
    }
    // The conventions carry their codes too.
    let me = &doc["paths"]["/rest/users/me"]["get"]["responses"];
    let codes = |status: &str| -> Vec<String> {
        me[status]["x-error-codes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect()
    };
    assert!(codes("400").contains(&"ERR_REQUEST_API_VERSION_MISSING".to_string()));
    assert_eq!(codes("401"), ["ERR_AUTH_UNAUTHORIZED"]);
    assert_eq!(codes("490"), ["ERR_REQUEST_BLOCKED_BY_WAF"]);
    let token = &doc["paths"]["/oauth/token"]["post"]["responses"]["400"]["x-error-codes"];
    assert!(
        token.as_array().unwrap().contains(&json!("invalid_grant")),
        "{token}"
    );
}

#[test]
fn the_document_names_this_server_and_its_brand() {
    let app = TestApp::builder()
        .config(|c| c.version_brand = "Acme".into())
        .spawn();
    let doc = document(&app);
    let servers = doc["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{servers:?}");
    let url = servers[0]["url"].as_str().unwrap();
    assert_eq!(url, app.base.trim_end_matches('/'));
    let header = doc["paths"]["/rest/devices"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["in"] == "header")
        .unwrap()
        .clone();
    assert_eq!(header["name"], "X-Acme-Version");
    let text = header["description"].as_str().unwrap();
    assert!(text.contains("`Acme`"), "{text}");
    assert!(text.contains("COFFER_VERSION_BRAND"), "{text}");
}

/// The `src` and `href` values of a page's `<script>` and `<link rel="stylesheet">` tags.
fn assets(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for tag in html.split('<').skip(1) {
        let lower = tag.to_ascii_lowercase();
        let attr = if lower.starts_with("script") {
            "src=\""
        } else if lower.starts_with("link") && lower.contains("rel=\"stylesheet\"") {
            "href=\""
        } else {
            continue;
        };
        let Some(start) = tag.find(attr) else {
            continue;
        };
        let rest = &tag[start + attr.len()..];
        out.push(rest[..rest.find('"').unwrap()].to_string());
    }
    out
}

#[test]
fn docs_serves_the_reference_from_this_server_under_a_strict_policy() {
    let app = TestApp::spawn();
    for path in ["/docs", "/docs/"] {
        let r = app.send("GET", path, &[], None);
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        let csp = r.header("content-security-policy").unwrap().to_string();
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{csp}"
        );
        let assets = assets(&r.text);
        assert!(assets.len() >= 4, "{path}: {assets:?} in {}", r.text);
        // No inline script: every script names its file.
        assert_eq!(
            r.text.matches("<script").count(),
            r.text.matches("<script src=\"/").count(),
            "{}",
            r.text
        );
        for asset in assets {
            assert!(
                asset.starts_with('/') && !asset.starts_with("//"),
                "{asset} is not same-origin"
            );
            let a = app.send("GET", &asset, &[], None);
            assert_eq!(a.status, 200, "{asset}");
            assert!(a.text.len() > 100, "{asset}: {} bytes", a.text.len());
            let kind = a.header("content-type").unwrap();
            assert!(
                kind.contains("javascript") || kind.contains("css"),
                "{asset}: {kind}"
            );
            assert!(a.header("content-security-policy").is_some(), "{asset}");
        }
    }
    // The viewer's settings point at this server's document.
    let init = app.send("GET", "/docs/coffer-docs.js", &[], None);
    assert_eq!(init.status, 200);
    assert!(init.text.contains("/openapi.json"), "{}", init.text);
    assert!(!init.text.contains("petstore"), "{}", init.text);
    // Only the viewer's own files are there.
    let r = app.send("GET", "/docs/no-such-file.js", &[], None);
    assert_eq!(r.status, 404);
    assert_eq!(r.code(), "ERR_REQUEST_NOT_FOUND");
}

#[test]
fn the_home_page_says_which_interface_and_how_to_read_the_vendors_header() {
    let app = TestApp::builder()
        .config(|c| c.version_brand = "Acme".into())
        .spawn();
    let r = app.send("GET", "/", &[], None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("the vendor's interface"), "{}", r.text);
    assert!(r.text.contains("version 28"), "{}", r.text);
    assert!(
        r.text
            .contains("<code id=\"version-header\">X-Acme-Version</code>"),
        "{}",
        r.text
    );
    assert!(r.text.contains("--version-brand"), "{}", r.text);
    assert!(r.text.contains("COFFER_VERSION_BRAND"), "{}", r.text);
    assert!(r.text.contains("href=\"/docs\""), "{}", r.text);
}
/// The property names of a documented body schema, through `$ref`s and compositions.
fn body_fields(doc: &Value, schema: &Value, out: &mut HashSet<String>) {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or_default();
        return body_fields(doc, &doc["components"]["schemas"][name], out);
    }
    if let Some(props) = schema["properties"].as_object() {
        out.extend(props.keys().cloned());
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for s in schema[key].as_array().into_iter().flatten() {
            body_fields(doc, s, out);
        }
    }
}

#[test]
fn every_body_field_the_reference_declares_is_documented_and_so_accepted() {
    // `tests/reference/request-bodies.json`: for each operation of the reference description
    // with a JSON body, the names of its fields (nothing else). A body read into its documented
    // type refuses a field the document does not name, so a reference client's field missing
    // here would be refused.
    let reference: std::collections::BTreeMap<String, Vec<String>> =
        serde_json::from_str(include_str!("../../reference/request-bodies.json")).unwrap();
    let app = TestApp::spawn();
    let doc = document(&app);
    let mut missing = Vec::new();
    let mut compared = 0;
    for (operation, fields) in &reference {
        let (method, path) = operation.split_once(' ').unwrap();
        let op = &doc["paths"][path][method.to_ascii_lowercase()];
        let schema = &op["requestBody"]["content"]["application/json"]["schema"];
        if schema.is_null() {
            // Not implemented, or implemented without a JSON body of its own.
            continue;
        }
        compared += 1;
        let mut documented = HashSet::new();
        body_fields(&doc, schema, &mut documented);
        for f in fields {
            if !documented.contains(f) {
                missing.push(format!("{operation}: {f}"));
            }
        }
    }
    assert!(compared >= 20, "{compared}");
    assert!(
        missing.is_empty(),
        "undocumented fields:\n{}",
        missing.join("\n")
    );
}
