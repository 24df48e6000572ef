//! The HTML pages: the server's home page, those of the authorization flow (sign-in, consent,
//! errors, and the landing page for clients that cannot be redirected), and those an outside
//! recipient of mail opens (the message, the code step, refusals). Every value written into a
//! page is HTML-escaped; a mail body goes in only as `coffer_domain::mail::body_html` rebuilt it.

use actix_web::http::StatusCode;
use actix_web::HttpResponse;

/// Escapes text for HTML element content and quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;background:#f4f1ec;color:#222;margin:0}\
main{max-width:420px;margin:8vh auto;background:#fff;padding:2rem;border-radius:10px;box-shadow:0 2px 12px #0002}\
body.mobile main{margin:0;max-width:none;min-height:100vh;border-radius:0;box-shadow:none}\
h1{font-size:1.4rem;margin-top:0}label{display:block;margin:1rem 0 .3rem;font-weight:600}\
input[type=email],input[type=password],input[type=text],input[type=date],textarea,select{width:100%;box-sizing:border-box;padding:.6rem;font-size:1rem;border:1px solid #bbb;border-radius:6px}\
button{margin-top:1.2rem;padding:.7rem 1.2rem;font-size:1rem;border:0;border-radius:6px;background:#6b4226;color:#fff;cursor:pointer}\
button.secondary{background:#ddd;color:#222}.error{color:#a00;background:#fee;padding:.6rem;border-radius:6px}\
code{word-break:break-all;background:#f4f4f4;padding:.3rem;display:block}\
body.wide main{max-width:760px}.meta{color:#555;font-size:.9rem}.meta dt{font-weight:600;float:left;margin-right:.4rem}\
.message{border-top:1px solid #ddd;border-bottom:1px solid #ddd;padding:1rem 0;margin:1rem 0;overflow-wrap:anywhere}\
ul.files{padding-left:1.2rem}ul.files li{margin:.3rem 0}.notice{background:#eef6ee;padding:.6rem;border-radius:6px}";

fn page(status: StatusCode, title: &str, mobile: bool, body: &str) -> HttpResponse {
    let class = if mobile { " class=\"mobile\"" } else { "" };
    framed(status, title, class, body)
}

fn framed(status: StatusCode, title: &str, class: &str, body: &str) -> HttpResponse {
    HttpResponse::build(status).content_type("text/html; charset=utf-8").body(format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · Coffer</title><style>{STYLE}</style></head><body{class}><main>{body}</main></body></html>",
        esc(title)
    ))
}

/// The home page (`GET /`): what this server is, and where its interface is described.
pub fn home(version_brand: &str) -> HttpResponse {
    let header = format!("X-{version_brand}-Version");
    page(
        StatusCode::OK,
        "Coffer",
        false,
        &format!(
            "<h1>Coffer</h1><p>This is a Coffer server, version <span id=\"version\">{}</span>: \
             secure content collaboration over a REST API and OAuth 2.0.</p>\
             <p>Coffer speaks the vendor's interface: the REST and OAuth 2.0 interface of the \
             enterprise file-sharing service, version 28, so clients written for that service work \
             with Coffer unchanged.</p>\
             <p>Every <code>/rest</code> call names the interface version in a header; this server \
             reads <code id=\"version-header\">{}</code>. Existing clients send the vendor's own \
             header, <code>X-&lt;Vendor&gt;-Version</code>: to take it as a drop-in replacement, \
             start <code>cofferd</code> with <code>--version-brand &lt;Vendor&gt;</code> (or \
             <code>COFFER_VERSION_BRAND=&lt;Vendor&gt;</code>, or <code>version_brand</code> in the \
             configuration file). The query parameter <code>apiVersion=28</code> works under any \
             brand.</p>\
             <p>Applications sign you in: they send your browser to the sign-in page, \
             <code>/oauth/authorize</code>, with their own client id. There is nothing to sign in \
             to here directly.</p>\
             <ul><li><a href=\"/docs\">/docs</a>: the interactive API reference, every operation \
             with its parameters and errors</li>\
             <li><a href=\"/openapi.json\">/openapi.json</a>: the API description (OpenAPI 3.1)</li>\
             <li><a href=\"/.well-known/oauth-authorization-server\">/.well-known/oauth-authorization-server</a>: \
             the OAuth 2.0 server metadata (endpoints and supported flows)</li></ul>",
            esc(env!("CARGO_PKG_VERSION")),
            esc(&header)
        ),
    )
}

/// An error shown in the browser; the authorization flow never redirects to an unverified URI.
pub fn error(status: StatusCode, message: &str) -> HttpResponse {
    page(
        status,
        "Sign-in error",
        false,
        &format!(
            "<h1>Sign-in error</h1><p class=\"error\">{}</p>",
            esc(message)
        ),
    )
}

/// An error page with its own title.
pub fn error_titled(status: StatusCode, title: &str, message: &str) -> HttpResponse {
    page(
        status,
        title,
        false,
        &format!(
            "<h1>{}</h1><p class=\"error\">{}</p>",
            esc(title),
            esc(message)
        ),
    )
}

/// The page a password-reset link opens: a new password, with the link's token and the CSRF
/// value carried as hidden inputs.
pub fn password_reset(
    token: &str,
    csrf: &str,
    error: Option<&str>,
    status: StatusCode,
) -> HttpResponse {
    let err = alert(error);
    page(
        status,
        "Choose a new password",
        false,
        &format!(
            "<h1>Choose a new password</h1>{err}\
             <form method=\"post\" action=\"{}\">{}\
             <label for=\"password\">New password</label><input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"new-password\" required>\
             <button type=\"submit\">Set password</button></form>",
            coffer_service::identity::password_reset::RESET_PAGE_PATH,
            hidden(&[("token", token), ("csrf", csrf)])
        ),
    )
}

/// After a reset by the page.
pub fn password_reset_done() -> HttpResponse {
    page(
        StatusCode::OK,
        "Password changed",
        false,
        "<h1>Password changed</h1><p id=\"done\">Your password has been changed, and every \
         session signed in with the old one has ended. Sign in again in your application.</p>",
    )
}

/// A form's error message, or nothing.
fn alert(error: Option<&str>) -> String {
    error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", esc(e)))
        .unwrap_or_default()
}

fn hidden(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| {
            format!(
                "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
                esc(k),
                esc(v)
            )
        })
        .collect()
}

/// The sign-in form. `fields` are the authorization request's parameters, carried as hidden
/// inputs so that the POST is checked again from scratch.
pub fn sign_in(
    client_name: &str,
    fields: &[(&str, &str)],
    csrf: &str,
    error: Option<&str>,
    mobile: bool,
    email: &str,
) -> HttpResponse {
    let status = if error.is_some() {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::OK
    };
    let err = alert(error);
    page(
        status,
        "Sign in",
        mobile,
        &format!(
            "<h1>Sign in</h1><p>to continue to <strong>{}</strong></p>{err}\
             <form method=\"post\" action=\"/oauth/authorize\">{}{}\
             <label for=\"email\">Email</label><input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"username\" required value=\"{}\">\
             <label for=\"password\">Password</label><input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required>\
             <button type=\"submit\">Sign in</button></form>",
            esc(client_name),
            hidden(fields),
            hidden(&[("csrf", csrf)]),
            esc(email)
        ),
    )
}

/// The two-factor page of the authorization flow: a code from the authenticator app, or one
/// sent by text message (with a form that sends a new one).
pub fn second_factor(
    client_name: &str,
    step: &coffer_service::oauth::SecondFactorPage,
    csrf: &str,
    mobile: bool,
) -> HttpResponse {
    let status = if step.error.is_some() {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::OK
    };
    let err = alert(step.error.as_deref().or(step.notice.as_deref()));
    let carried = hidden(&[("ticket", &step.ticket), ("csrf", csrf)]);
    let resend = if step.resend {
        format!(
            "<form method=\"post\" action=\"/oauth/tfa\">{carried}{}\
             <button type=\"submit\" class=\"secondary\">Send a new code</button></form>",
            hidden(&[("resend", "1")])
        )
    } else {
        String::new()
    };
    page(
        status,
        "Two-step verification",
        mobile,
        &format!(
            "<h1>Two-step verification</h1><p>to continue to <strong>{}</strong></p>{err}<p>{}</p>\
             <form method=\"post\" action=\"/oauth/tfa\">{carried}\
             <label for=\"code\">Code</label><input id=\"code\" name=\"code\" type=\"text\" inputmode=\"numeric\" \
             autocomplete=\"one-time-code\" pattern=\"[0-9]{{6}}\" maxlength=\"6\" required>\
             <button type=\"submit\">Verify</button></form>{resend}",
            esc(client_name),
            esc(&step.prompt),
        ),
    )
}

/// The password-change page of the authorization flow, when a change is due.
pub fn password_change(
    client_name: &str,
    ticket: &str,
    csrf: &str,
    error: Option<&str>,
    mobile: bool,
) -> HttpResponse {
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let err = alert(error);
    page(
        status,
        "Change your password",
        mobile,
        &format!(
            "<h1>Change your password</h1><p>A new password is due before you continue to <strong>{}</strong>.</p>{err}\
             <form method=\"post\" action=\"/oauth/password\">{}\
             <label for=\"previousPassword\">Current password</label><input id=\"previousPassword\" name=\"previousPassword\" type=\"password\" autocomplete=\"current-password\" required>\
             <label for=\"password\">New password</label><input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"new-password\" required>\
             <button type=\"submit\">Change password</button></form>",
            esc(client_name),
            hidden(&[("ticket", ticket), ("csrf", csrf)])
        ),
    )
}

/// The consent page: Allow or Deny for a client's requested scope.
pub fn consent(
    client_name: &str,
    scope: &str,
    ticket: &str,
    csrf: &str,
    mobile: bool,
) -> HttpResponse {
    let items: String = scope
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(|s| format!("<li><code>{}</code></li>", esc(s)))
        .collect();
    page(
        StatusCode::OK,
        "Allow access",
        mobile,
        &format!(
            "<h1>Allow access?</h1><p><strong>{}</strong> asks to act for you with this access:</p><ul>{items}</ul>\
             <form method=\"post\" action=\"/oauth/consent\">{}\
             <button type=\"submit\" name=\"decision\" value=\"allow\">Allow</button> \
             <button type=\"submit\" name=\"decision\" value=\"deny\" class=\"secondary\">Deny</button></form>",
            esc(client_name),
            hidden(&[("ticket", ticket), ("csrf", csrf)])
        ),
    )
}

/// The landing page for clients that cannot be redirected: shows the code (and state).
pub fn callback(
    code: Option<&str>,
    state: Option<&str>,
    error: Option<&str>,
    description: Option<&str>,
) -> HttpResponse {
    let body = match (code, error) {
        (Some(code), _) => format!(
            "<h1>Authorization code</h1><p>Copy this code into the application:</p><code id=\"code\">{}</code>{}",
            esc(code),
            state.map(|s| format!("<p>State:</p><code id=\"state\">{}</code>", esc(s))).unwrap_or_default()
        ),
        (None, Some(e)) => format!(
            "<h1>Authorization failed</h1><p class=\"error\"><span id=\"error\">{}</span>{}</p>",
            esc(e),
            description.map(|d| format!(": {}", esc(d))).unwrap_or_default()
        ),
        (None, None) => "<h1>Nothing to show</h1><p>This page shows the authorization code after signing in.</p>".to_string(),
    };
    page(StatusCode::OK, "Authorization", false, &body)
}

/// The public page of a web form (`{base}/forms/{id}`), built from its fields.
pub mod forms {
    use super::{alert, esc, framed, hidden};
    use actix_web::http::StatusCode;
    use actix_web::HttpResponse;
    use coffer_domain::web_form::Field;
    use coffer_service::web_forms::PageForm;
    use std::collections::HashMap;

    /// The script that sends a form's files through the public upload.
    pub const SCRIPT: &str = "/forms/static/web-form.js";

    fn form_page(status: StatusCode, title: &str, body: &str) -> HttpResponse {
        framed(status, title, " class=\"wide\"", body)
    }

    /// A refusal or a notice on a form's page.
    pub fn notice(status: StatusCode, title: &str, message: &str) -> HttpResponse {
        form_page(
            status,
            title,
            &format!(
                "<h1>{}</h1><p class=\"error\" id=\"refusal\">{}</p>",
                esc(title),
                esc(message)
            ),
        )
    }

    /// One field as an input, with `value` (what was entered, or the default).
    fn input(f: &Field, value: Option<&str>) -> String {
        let id = format!("field-{}", esc(&f.id));
        let name = esc(&f.id);
        let required = if f.mandatory { " required" } else { "" };
        let readonly = if f.editable { "" } else { " readonly" };
        let placeholder = f
            .placeholder
            .as_deref()
            .map(|p| format!(" placeholder=\"{}\"", esc(p)))
            .unwrap_or_default();
        let value = value.or(f.default_value.as_deref()).unwrap_or_default();
        let mark = if f.mandatory {
            " <span class=\"required\" aria-hidden=\"true\">*</span>"
        } else {
            ""
        };
        let label = format!("<label for=\"{id}\">{}{mark}</label>", esc(&f.label));
        match f.kind.as_str() {
            "textarea" => format!(
                "{label}<textarea id=\"{id}\" name=\"{name}\" rows=\"5\"{placeholder}{required}{readonly}>{}</textarea>",
                esc(value)
            ),
            "select" => {
                let disabled = if f.editable { "" } else { " disabled" };
                let mut options = String::from("<option value=\"\"></option>");
                for o in f.options() {
                    let selected = if o == value { " selected" } else { "" };
                    options.push_str(&format!(
                        "<option value=\"{0}\"{selected}>{0}</option>",
                        esc(o)
                    ));
                }
                format!("{label}<select id=\"{id}\" name=\"{name}\"{required}{disabled}>{options}</select>")
            }
            "checkbox" => {
                let checked = if value == "true" || value == "on" { " checked" } else { "" };
                let disabled = if f.editable { "" } else { " disabled" };
                format!(
                    "<label class=\"check\"><input type=\"checkbox\" id=\"{id}\" name=\"{name}\" value=\"true\"{checked}{required}{disabled}> {}{mark}</label>",
                    esc(&f.label)
                )
            }
            kind => {
                let t = match kind {
                    "email" => "email",
                    "date" => "date",
                    _ => "text",
                };
                format!(
                    "{label}<input type=\"{t}\" id=\"{id}\" name=\"{name}\" value=\"{}\"{placeholder}{required}{readonly}>",
                    esc(value)
                )
            }
        }
    }

    /// The form: its fields in display order, a file input, the CSRF value; `error` (a
    /// refused submission) above it with what was entered kept, and `carried` hidden values
    /// (a started submission whose files are kept).
    pub fn form(
        f: &PageForm,
        action: &str,
        csrf: &str,
        values: &HashMap<String, String>,
        error: Option<&str>,
        carried: &[(&str, &str)],
        status: StatusCode,
    ) -> HttpResponse {
        let fields: String = f
            .fields
            .iter()
            .map(|x| {
                format!(
                    "<div class=\"field\">{}</div>",
                    input(x, values.get(&x.id).map(String::as_str))
                )
            })
            .collect();
        let description = if f.description.is_empty() {
            String::new()
        } else {
            format!("<p id=\"description\">{}</p>", esc(&f.description))
        };
        form_page(
            status,
            &f.name,
            &format!(
                "<h1 id=\"form-name\">{}</h1>{description}{}\
                 <form method=\"post\" action=\"{action}\" enctype=\"multipart/form-data\" id=\"web-form\" \
                 data-start=\"{action}/submissions\" data-api-version=\"{}\">{}{fields}\
                 <div class=\"field\"><label for=\"files\">Files</label><input type=\"file\" id=\"files\" name=\"files\" multiple></div>\
                 <p class=\"meta\"><span aria-hidden=\"true\">*</span> required</p>\
                 <p id=\"upload-status\" class=\"meta\" role=\"status\"></p>\
                 <button type=\"submit\" id=\"submit\">Send</button></form>\
                 <script src=\"{SCRIPT}\" defer></script>",
                esc(&f.name),
                alert(error),
                crate::plumbing::middleware::API_VERSION,
                hidden(&[&[("csrf", csrf)], carried].concat()),
                action = esc(action),
            ),
        )
    }

    /// After a submission.
    pub fn thanks(name: &str) -> HttpResponse {
        form_page(
            StatusCode::OK,
            name,
            &format!(
                "<h1>{}</h1><p class=\"notice\" id=\"thanks\">Thank you. Your submission has been sent.</p>",
                esc(name)
            ),
        )
    }
}

/// The pages an outside recipient of mail opens (`/mail/{id}?ref=…`).
pub mod mail {
    use super::{alert, esc, framed, hidden};
    use actix_web::http::StatusCode;
    use actix_web::HttpResponse;
    use coffer_service::mail::access::Message;

    fn mail_page(status: StatusCode, title: &str, body: &str) -> HttpResponse {
        framed(status, title, " class=\"wide\"", body)
    }

    /// A refusal: the link is not good, or no longer, or not for this page.
    pub fn refused(status: StatusCode, title: &str, message: &str) -> HttpResponse {
        mail_page(
            status,
            title,
            &format!(
                "<h1>{}</h1><p class=\"error\" id=\"refusal\">{}</p>",
                esc(title),
                esc(message)
            ),
        )
    }

    fn from_line(m: &Message) -> String {
        if m.sender_name.is_empty() {
            esc(&m.sender_email)
        } else {
            format!("{} &lt;{}&gt;", esc(&m.sender_name), esc(&m.sender_email))
        }
    }

    fn heading(m: &Message) -> String {
        let subject = if m.subject.is_empty() {
            "(no subject)"
        } else {
            &m.subject
        };
        format!(
            "<h1 id=\"subject\">{}</h1><dl class=\"meta\"><dt>From</dt><dd id=\"from\">{}</dd>\
             <dt>To</dt><dd id=\"to\">{}</dd><dt>Date</dt><dd id=\"date\">{}</dd>{}</dl>",
            esc(subject),
            from_line(m),
            esc(&m.recipient),
            esc(&m.date),
            m.expire_at
                .as_ref()
                .map(|x| format!("<dt>Available until</dt><dd>{}</dd>", esc(x)))
                .unwrap_or_default()
        )
    }

    /// The message: its heading, its body (as safe HTML) and its files, each with a download
    /// link that carries the reference.
    pub fn message(m: &Message, reference: &str) -> HttpResponse {
        let files: String = m
            .attachments
            .iter()
            .map(|a| {
                if a.withdrawn {
                    // Named so the recipient knows what the sender took back; no link.
                    return format!(
                        "<li class=\"withdrawn\">{} <span class=\"meta\">(withdrawn by the sender)</span></li>",
                        esc(&a.name)
                    );
                }
                format!(
                    "<li><a class=\"download\" href=\"/mail/{}/attachments/{}/content?ref={}\">{}</a> \
                     <span class=\"meta\">({} bytes, {})</span></li>",
                    esc(&m.email_id),
                    esc(&a.id),
                    esc(reference),
                    esc(&a.name),
                    a.size,
                    esc(&a.mime)
                )
            })
            .collect();
        let files = if files.is_empty() {
            String::new()
        } else {
            format!("<h2>Files</h2><ul class=\"files\">{files}</ul>")
        };
        mail_page(
            StatusCode::OK,
            &m.subject,
            &format!(
                "{}<div class=\"message\" id=\"body\">{}</div>{files}",
                heading(m),
                m.body_html.as_deref().unwrap_or_default()
            ),
        )
    }

    /// The first step of a message that asks for proof of the address: who sent it, and a
    /// button that mails a code.
    pub fn ask_code(m: &Message, reference: &str, csrf: &str) -> HttpResponse {
        mail_page(
            StatusCode::OK,
            "Open a secure message",
            &format!(
                "<h1>A secure message for you</h1><p><strong>{}</strong> sent a secure message to \
                 <strong>{}</strong>. To open it, confirm that this address is yours: we send a \
                 6-digit code to it.</p>\
                 <form method=\"post\" action=\"/mail/{}/code\">{}\
                 <button type=\"submit\" id=\"send-code\">Send me a code</button></form>",
                from_line(m),
                esc(&m.recipient),
                esc(&m.email_id),
                hidden(&[("ref", reference), ("csrf", csrf)])
            ),
        )
    }

    /// The form for the code, with an error when an attempt failed, and a button for a new code.
    pub fn enter_code(
        email_id: &str,
        reference: &str,
        csrf: &str,
        notice: Option<&str>,
        error: Option<&str>,
    ) -> HttpResponse {
        let status = if error.is_some() {
            StatusCode::UNAUTHORIZED
        } else {
            StatusCode::OK
        };
        let notice = notice
            .map(|n| format!("<p class=\"notice\" id=\"notice\">{}</p>", esc(n)))
            .unwrap_or_default();
        let carried = hidden(&[("ref", reference), ("csrf", csrf)]);
        mail_page(
            status,
            "Enter your code",
            &format!(
                "<h1>Enter your code</h1>{notice}{}\
                 <form method=\"post\" action=\"/mail/{id}/verify\">{carried}\
                 <label for=\"code\">Code</label><input id=\"code\" name=\"code\" type=\"text\" inputmode=\"numeric\" \
                 autocomplete=\"one-time-code\" pattern=\"[0-9]{{6}}\" maxlength=\"6\" required>\
                 <button type=\"submit\" id=\"verify\">Open the message</button></form>\
                 <form method=\"post\" action=\"/mail/{id}/code\">{carried}\
                 <button type=\"submit\" class=\"secondary\" id=\"send-code\">Send a new code</button></form>",
                alert(error),
                id = esc(email_id),
            ),
        )
    }
}

/// The recipient's page of a request-file link (`{base}/requestFile/{ref}`): a shell the page's
/// script fills from `/rest/requestFile/{ref}` (the request, the offered files, what is left),
/// with the upload and the reply. Its style and script are files of this origin, so the page's
/// policy allows no inline script or style at all.
pub mod request_file {
    use super::{esc, STYLE};
    use actix_web::http::{header, StatusCode};
    use actix_web::HttpResponse;

    /// The page's script.
    pub const SCRIPT: &str = "/requestFile/static/request-file.js";
    /// The page's style sheet.
    pub const STYLE_SHEET: &str = "/requestFile/static/request-file.css";

    /// The page's policy: its own script and style only, calls to this origin only, never framed.
    pub const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
         connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

    /// What the page's style sheet holds: the pages' common style, and the upload's.
    pub fn style_sheet() -> String {
        format!(
            "{STYLE}[hidden]{{display:none!important}}\
             ul.progress{{list-style:none;padding:0}}ul.progress li{{margin:.4rem 0}}\
             ul.progress progress{{width:40%;vertical-align:middle}}ul.progress li.failed .state{{color:#a00}}\
             input[type=file]{{margin:.4rem 0}}textarea{{min-height:5rem}}\
             img.image-view{{display:block;max-width:100%;max-height:24rem;margin:.4rem 0}}\
             pre.text-view{{max-height:24rem;overflow:auto;white-space:pre-wrap;border:1px solid #ccc;padding:.5rem}}"
        )
    }

    /// What the server puts on the page for its script.
    pub struct Shell<'a> {
        pub reference: &'a str,
        pub api_version: u32,
        /// The size the script splits files at.
        pub chunk_size: i64,
        /// The largest file the server takes (`maxUploadSize`).
        pub max_size: i64,
    }

    fn framed(status: StatusCode, title: &str, body: &str) -> HttpResponse {
        HttpResponse::build(status)
            .content_type("text/html; charset=utf-8")
            .insert_header((header::CONTENT_SECURITY_POLICY, POLICY))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .body(format!(
                "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
                 <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
                 <title>{} · Coffer</title><link rel=\"stylesheet\" href=\"{STYLE_SHEET}\"></head>\
                 <body class=\"wide\"><main>{body}</main></body></html>",
                esc(title)
            ))
    }

    /// The request's page: every part the script shows, hidden until it knows which.
    pub fn page(s: &Shell) -> HttpResponse {
        framed(
            StatusCode::OK,
            "Files requested",
            &format!(
                "<div id=\"request-file\" data-ref=\"{}\" data-api-version=\"{}\" data-chunk-size=\"{}\" data-max-size=\"{}\">\
                 <p id=\"loading\" class=\"meta\">Loading the request…</p>\
                 <p id=\"noscript-note\" class=\"error\">This page needs JavaScript to show the request and send files.</p>\
                 <section id=\"state\" hidden><h1 id=\"state-title\"></h1><p class=\"error\" id=\"state-message\" role=\"alert\"></p></section>\
                 <section id=\"auth\" hidden><h1>Confirm your address</h1>\
                 <p>This request for files is for the person it was sent to. To open it, confirm that \
                 the address is yours: we mail a 6-digit code to it.</p>\
                 <p id=\"auth-notice\" class=\"notice\" hidden></p>\
                 <form id=\"code-form\" hidden><label for=\"code\">Code</label>\
                 <input id=\"code\" name=\"code\" type=\"text\" inputmode=\"numeric\" autocomplete=\"one-time-code\" \
                 pattern=\"[0-9]{{6}}\" maxlength=\"6\" required>\
                 <button type=\"submit\" id=\"verify\">Open the request</button></form>\
                 <button type=\"button\" id=\"send-code\">Send me a code</button>\
                 <p id=\"auth-status\" class=\"meta\" role=\"status\"></p>\
                 <p class=\"meta\">If you have a Coffer account with this address, you can also sign in to \
                 Coffer in this browser and open the link again.</p></section>\
                 <section id=\"request\" hidden>\
                 <h1 id=\"subject\"></h1>\
                 <dl class=\"meta\"><div><dt>From</dt><dd id=\"from\"></dd></div>\
                 <div id=\"expire-row\"><dt>Open until</dt><dd id=\"expire\"></dd></div>\
                 <div id=\"excluded-row\" hidden><dt>Not accepted</dt><dd id=\"excluded\"></dd></div></dl>\
                 <div class=\"message\" id=\"message\"></div>\
                 <section id=\"sources\" hidden><h2>Files for you</h2><ul class=\"files\" id=\"source-list\"></ul></section>\
                 <h2>Send files</h2><p id=\"remaining\" class=\"meta\"></p>\
                 <p id=\"exhausted\" class=\"notice\" hidden>You have sent all the files this request takes. \
                 You can still reply to the sender.</p>\
                 <form id=\"upload-form\"><label for=\"files\">Files</label>\
                 <input type=\"file\" id=\"files\" name=\"files\" multiple>\
                 <button type=\"submit\" id=\"send\">Send files</button></form>\
                 <ul class=\"progress\" id=\"progress\"></ul>\
                 <p id=\"upload-status\" class=\"meta\" role=\"status\"></p>\
                 <h2>Reply</h2>\
                 <form id=\"reply-form\"><label for=\"reply-body\">Message to the sender</label>\
                 <textarea id=\"reply-body\" name=\"body\" rows=\"4\" maxlength=\"10000\"></textarea>\
                 <button type=\"submit\" id=\"reply-send\">Send reply</button></form>\
                 <p id=\"reply-status\" class=\"meta\" role=\"status\"></p>\
                 <p id=\"replied\" class=\"notice\" hidden>Your reply has been sent. The sender has been told \
                 that your files are there.</p>\
                 </section></div>\
                 <script src=\"{SCRIPT}\" defer></script>",
                esc(s.reference),
                s.api_version,
                s.chunk_size,
                s.max_size,
            ),
        )
    }
}

/// The cookie holding a page form's CSRF value: HttpOnly, for `path` only, `Secure` when the
/// server is reached over https (or when `same_site` is `None`, which browsers require).
pub fn csrf_cookie(
    name: &'static str,
    value: &str,
    path: &'static str,
    secure: bool,
    same_site: actix_web::cookie::SameSite,
) -> actix_web::cookie::Cookie<'static> {
    actix_web::cookie::Cookie::build(name, value.to_string())
        .path(path)
        .http_only(true)
        .secure(secure || same_site == actix_web::cookie::SameSite::None)
        .same_site(same_site)
        .finish()
}

/// Whether a form's CSRF value is the one in its cookie `name` (compared in constant time; an
/// empty or missing value never is).
pub fn csrf_matches(req: &actix_web::HttpRequest, name: &str, form_value: Option<&str>) -> bool {
    use subtle::ConstantTimeEq;
    match (req.cookie(name), form_value) {
        (Some(c), Some(f)) if !f.is_empty() => c.value().as_bytes().ct_eq(f.as_bytes()).into(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_of(r: HttpResponse) -> String {
        let b = actix_web::body::to_bytes(r.into_body());
        let b = futures_util::FutureExt::now_or_never(b).unwrap().unwrap();
        String::from_utf8(b.to_vec()).unwrap()
    }

    #[test]
    fn a_mail_page_escapes_what_it_shows_and_keeps_the_safe_body() {
        let mut m = coffer_service::mail::access::Message {
            email_id: "e-1".into(),
            recipient: "out@x.example".into(),
            sender_name: "Ann <admin>".into(),
            sender_email: "ann@example.com".into(),
            subject: "Q3 \"<script>\"".into(),
            date: "2026-11-25T10:00:00Z".into(),
            expire_at: None,
            verified: true,
            body_html: Some("See <b>zebra</b>".into()),
            attachments: vec![
                coffer_service::mail::access::Item {
                    id: "a-1".into(),
                    name: "<x>.pdf".into(),
                    size: 3,
                    mime: "application/pdf".into(),
                    withdrawn: false,
                },
                coffer_service::mail::access::Item {
                    id: "a-2".into(),
                    name: "gone.txt".into(),
                    size: 3,
                    mime: "text/plain".into(),
                    withdrawn: true,
                },
            ],
        };
        let html = body_of(mail::message(&m, "ref-1"));
        // A withdrawn file is named as withdrawn and has no link.
        assert!(
            html.contains("gone.txt <span class=\"meta\">(withdrawn by the sender)"),
            "{html}"
        );
        assert!(!html.contains("attachments/a-2"), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("Q3 &quot;&lt;script&gt;&quot;"), "{html}");
        assert!(html.contains("Ann &lt;admin&gt;"), "{html}");
        assert!(html.contains("See <b>zebra</b>"), "{html}");
        assert!(html.contains("href=\"/mail/e-1/attachments/a-1/content?ref=ref-1\""));
        assert!(html.contains("&lt;x&gt;.pdf"));
        // Before the address is proved: no body and no files, a form with its CSRF token.
        m.verified = false;
        let html = body_of(mail::ask_code(&m, "ref-1", "tok"));
        assert!(!html.contains("zebra") && !html.contains(".pdf"), "{html}");
        assert!(html.contains("name=\"csrf\" value=\"tok\""), "{html}");
        assert!(html.contains("action=\"/mail/e-1/code\""), "{html}");
    }

    #[test]
    fn the_request_file_page_escapes_its_reference_and_runs_no_inline_code() {
        let r = request_file::page(&request_file::Shell {
            reference: "a\"><script>x()</script>",
            api_version: 28,
            chunk_size: 65536,
            max_size: 1024,
        });
        let policy = r
            .headers()
            .get("content-security-policy")
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        assert_eq!(policy, request_file::POLICY);
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        let html = body_of(r);
        assert!(
            html.contains("data-ref=\"a&quot;&gt;&lt;script&gt;x()&lt;/script&gt;\""),
            "{html}"
        );
        assert!(html.contains("data-chunk-size=\"65536\""), "{html}");
        // One script, the page's file; no inline script, no inline style.
        assert_eq!(html.matches("<script").count(), 1, "{html}");
        assert!(
            html.contains("<script src=\"/requestFile/static/request-file.js\" defer></script>")
        );
        assert!(
            !html.contains("<style") && !html.contains(" style="),
            "{html}"
        );
    }

    #[test]
    fn escapes_everything_dangerous() {
        assert_eq!(
            esc("<a href=\"x\" onclick='y'>&</a>"),
            "&lt;a href=&quot;x&quot; onclick=&#x27;y&#x27;&gt;&amp;&lt;/a&gt;"
        );
    }
}
