// The recipient's page of a request-file link (docs/request-files.md, "The recipient's page").
// The link's reference is the recipient's credential: every call goes to
// `/rest/requestFile/{ref}/...` with the reference in the path. A link that asks the recipient
// to prove the address (`requireAuth`) is opened by a code mailed to it (`actions/sendCode`,
// `actions/verifyCode`), which sets a session cookie for this origin only, and every call that
// changes something carries that session's CSRF token (`X-RF-CSRF-TOKEN`, from the cookie
// `coffer_rf_csrf`); a Coffer session of the recipient works too, and then such calls carry its
// CSRF token (`X-XSRF-TOKEN`, the rule of Coffer's web sessions). What the link opens is put on
// the page's main element as `data-state`, from the server's codes and fields, never from its
// words. The page reads the request and its offered files, sends the chosen files in chunks of
// the size the server put on the page (a file larger than one chunk goes in several), and sends
// the reply. Text from the server is only ever set as text; the request's message, which may
// carry formatting, is copied element by element from an inert parse, keeping only the
// formatting tags.
"use strict";
(function () {
  var root = document.getElementById("request-file");
  if (!root || !window.fetch || !window.FormData || !window.Promise) {
    return;
  }
  var reference = root.getAttribute("data-ref");
  var version = root.getAttribute("data-api-version");
  var chunkSize = Math.max(1, parseInt(root.getAttribute("data-chunk-size"), 10) || 1048576);
  var maxSize = parseInt(root.getAttribute("data-max-size"), 10) || 0;
  var base = "/rest/requestFile/" + encodeURIComponent(reference);

  function $(id) {
    return document.getElementById(id);
  }

  // What the link opens, for people (the visible parts) and programs alike: `data-state` on
  // the page's main element and on the request's element.
  var main = document.querySelector("main");
  function setState(state) {
    root.setAttribute("data-state", state);
    if (main) { main.setAttribute("data-state", state); }
  }

  function show(id, visible) {
    $(id).hidden = !visible;
  }

  function url(path) {
    var p = path.charAt(0) === "/" ? path : "/" + path;
    return p + (p.indexOf("?") < 0 ? "?" : "&") + "apiVersion=" + encodeURIComponent(version);
  }

  // A refusal: the server's status, catalogue code, message and the field it names.
  function Refusal(status, code, message, field) {
    this.status = status;
    this.code = code || "";
    this.message = message || ("The server answered " + status + ".");
    this.field = field || "";
  }

  // The JSON of an answer, or a `Refusal`.
  function answer(r) {
    return r.text().then(function (text) {
      var body = null;
      try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
      if (!r.ok) {
        var e0 = body && body.errors && body.errors[0];
        throw new Refusal(r.status, e0 && e0.code, e0 && e0.message, e0 && e0.field);
      }
      return body;
    });
  }

  // Cookies go with the calls (a code's session, a Coffer session) until one turns out to be
  // a Coffer session that has ended: then the reference alone is tried.
  var credentials = "same-origin";

  function cookie(name) {
    var found = document.cookie.split("; ").filter(function (c) {
      return c.indexOf(name + "=") === 0;
    })[0];
    return found ? decodeURIComponent(found.slice(name.length + 1)) : null;
  }

  function call(method, path, body) {
    var init = { method: method, credentials: credentials, headers: {} };
    var xsrf = cookie("XSRF-TOKEN");
    if (method !== "GET" && xsrf && credentials !== "omit") {
      init.headers["X-XSRF-TOKEN"] = xsrf;
    }
    var rfCsrf = cookie("coffer_rf_csrf");
    if (method !== "GET" && rfCsrf && credentials !== "omit") {
      init.headers["X-RF-CSRF-TOKEN"] = rfCsrf;
    }
    if (body instanceof FormData) {
      init.body = body;
    } else if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(url(path), init).then(answer, function () {
      throw new Refusal(0, "", "The server could not be reached. Check the connection and try again.");
    }).catch(function (e) {
      if (e.code === "ERR_AUTH_UNAUTHORIZED" && credentials !== "omit") {
        credentials = "omit";
        return call(method, path, body);
      }
      throw e;
    });
  }

  function say(id, text, failed) {
    var node = $(id);
    node.textContent = text;
    node.className = failed ? "error" : "meta";
  }

  // The pages the link can end on instead of the request.
  var STATES = {
    expired: ["Request expired", "This request for files has expired: its sender made it available for a limited time only. Ask the sender for a new link if you still need to send files."],
    withdrawn: ["Request withdrawn", "The sender has withdrawn this request for files. Nothing more can be sent through this link."],
    deleted: ["Request closed", "The folder this request sends files to is no longer available, so the request is closed."],
    invalid: ["Link not valid", "This link does not open a request for files. Check that you used the whole link from the email you received."],
    limited: ["Too many attempts", "Too many attempts from this address. Try again in a few minutes."],
    other: ["Not for this account", "This request was sent to someone else. If it was sent to you at another address, sign out of Coffer in this browser (or use a private window) and open the link again."],
    unavailable: ["Request not available", "This request cannot be shown right now. Try again later."]
  };

  function stateOf(e) {
    if (e.code === "ERR_ENTITY_REQUEST_FILE_EXPIRED") {
      return e.field === "withdrawn" ? "withdrawn" : "expired";
    }
    if (e.code === "ERR_ENTITY_DELETED") { return "deleted"; }
    if (e.code === "ERR_REQUEST_RATE_LIMITED") { return "limited"; }
    if (e.code === "ERR_ACCESS_USER" && e.field === "recipient") { return "other"; }
    if (e.status === 404 || e.code === "ERR_ACCESS_USER") { return "invalid"; }
    return "unavailable";
  }

  // The code step of a link that wants the recipient to prove the address.
  function askCode() {
    setState("auth");
    show("loading", false);
    show("request", false);
    show("state", false);
    show("auth", true);
  }

  function sendCode() {
    $("send-code").disabled = true;
    say("auth-status", "Sending a code…", false);
    call("POST", base + "/actions/sendCode").then(function (sent) {
      $("auth-notice").textContent = "A 6-digit code is being mailed to " + (sent && sent.sentTo) +
        "; it may take a moment to arrive.";
      show("auth-notice", true);
      show("code-form", true);
      $("send-code").textContent = "Send a new code";
      $("send-code").className = "secondary";
      say("auth-status", "", false);
      $("code").focus();
    }, function (e) {
      say("auth-status", e.message, true);
    }).then(function () { $("send-code").disabled = false; });
  }

  function verify(event) {
    event.preventDefault();
    $("verify").disabled = true;
    call("POST", base + "/actions/verifyCode", { code: $("code").value.trim() }).then(function () {
      show("auth", false);
      show("loading", true);
      return open();
    }, function (e) {
      say("auth-status", e.message, true);
    }).then(function () { $("verify").disabled = false; });
  }

  function end(state) {
    var s = STATES[state] || STATES.unavailable;
    $("state-title").textContent = s[0];
    $("state-message").textContent = s[1];
    setState(state);
    show("loading", false);
    show("request", false);
    show("state", true);
  }

  function sizeText(n) {
    if (n < 1024) { return n + " bytes"; }
    if (n < 1048576) { return (n / 1024).toFixed(1) + " KB"; }
    return (n / 1048576).toFixed(1) + " MB";
  }

  // The formatting a message may carry (the server accepts no other markup in it).
  var TAGS = ["a", "b", "blockquote", "br", "div", "em", "h1", "h2", "h3", "hr", "i", "li", "ol",
    "p", "pre", "s", "span", "strong", "sub", "sup", "u", "ul"];

  // Text with its line breaks kept.
  function textInto(to, text) {
    text.split("\n").forEach(function (line, i) {
      if (i > 0) { to.appendChild(document.createElement("br")); }
      if (line) { to.appendChild(document.createTextNode(line)); }
    });
  }

  // Copies a parsed message into the page anew: text as text, each allowed element as a new
  // element with nothing but its name (a link also its http(s) address); anything else only
  // as its text. The parsed document is inert: nothing in it runs or loads.
  function rebuild(from, to) {
    Array.prototype.forEach.call(from.childNodes, function (n) {
      if (n.nodeType === 3) {
        textInto(to, n.nodeValue);
        return;
      }
      if (n.nodeType !== 1) {
        return;
      }
      var tag = n.tagName.toLowerCase();
      if (tag === "script" || tag === "style" || tag === "template") {
        return;
      }
      if (TAGS.indexOf(tag) < 0) {
        rebuild(n, to);
        return;
      }
      var e = document.createElement(tag);
      if (tag === "a") {
        var href = n.getAttribute("href") || "";
        if (/^https?:\/\//i.test(href)) {
          e.href = href;
          e.rel = "noopener noreferrer nofollow";
          e.target = "_blank";
        }
      }
      rebuild(n, e);
      to.appendChild(e);
    });
  }

  function showMessage(text) {
    var node = $("message");
    while (node.firstChild) { node.removeChild(node.firstChild); }
    if (text.indexOf("<") < 0 || !window.DOMParser) {
      textInto(node, text);
      return;
    }
    rebuild(new DOMParser().parseFromString(text, "text/html").body, node);
  }

  var current = null;

  // The request's heading, message and what is left.
  function render(rf) {
    current = rf;
    var requestor = rf.requestor || {};
    var who = requestor.name ? requestor.name + " <" + (requestor.email || "") + ">" : (requestor.email || "");
    $("from").textContent = who;
    $("subject").textContent = (rf.email && rf.email.subject) || "Files requested";
    showMessage(rf.message || "");
    show("message", !!rf.message);
    $("expire").textContent = rf.expire || "";
    show("expire-row", !!rf.expire);
    var excluded = rf.excludedFileExtensions || (rf.config && rf.config.excludedFileExtensions) || [];
    $("excluded").textContent = excluded.join(", ");
    show("excluded-row", excluded.length > 0);
    updateRemaining(rf);
    setState(rf.remaining === 0 ? "exhausted" : "active");
    show("loading", false);
    show("state", false);
    show("request", true);
  }

  function updateRemaining(rf) {
    var left = typeof rf.remaining === "number" ? rf.remaining : null;
    $("remaining").textContent = left === null ? "" :
      left + " of " + rf.fileLimit + " file(s) can still be sent.";
    var exhausted = left === 0;
    show("exhausted", exhausted);
    show("upload-form", !exhausted);
  }

  function refresh() {
    return call("GET", base + "", undefined).then(function (rf) {
      current = rf;
      updateRemaining(rf);
      setState(rf.remaining === 0 ? "exhausted" : "active");
      return rf;
    });
  }

  // One offered file: a download link when allowed, else a view link when a preview exists.
  function source(s) {
    var id = String(s.fileId);
    var allowed = {};
    (s.permissions || []).forEach(function (p) { allowed[p.name] = !!p.enabled; });
    var li = document.createElement("li");
    li.className = "source";
    return call("GET", base + "/sources/" + encodeURIComponent(id)).then(function (f) {
      var name = f.name || id;
      if (allowed.download) {
        var a = document.createElement("a");
        a.className = "download";
        a.href = url(base + "/sources/" + encodeURIComponent(id) + "/content");
        a.setAttribute("download", name);
        a.textContent = name;
        li.appendChild(a);
      } else {
        var span = document.createElement("span");
        span.className = "name";
        span.textContent = name;
        li.appendChild(span);
      }
      var meta = document.createElement("span");
      meta.className = "meta";
      meta.textContent = " (" + sizeText(f.size || 0) + (allowed.download ? "" : ", view only") + ") ";
      li.appendChild(meta);
      if (!allowed.view || allowed.download) {
        return li;
      }
      var wait = document.createElement("span");
      wait.className = "meta";
      li.appendChild(wait);
      // How the file is viewed, for people and programs: `data-view` is `image`, `text`,
      // `link` (a PDF or other type opened in its own tab) or `none`.
      function viewed(kind) {
        li.setAttribute("data-view", kind);
      }
      function noPreview() {
        wait.textContent = "No preview available.";
        viewed("none");
      }
      // The view in place: an image in the page, a text as text, anything else (a PDF) behind a
      // "View" link. Every address is this server's, with the interface version.
      function shown(p, link) {
        var to = new URL(link, window.location.href);
        if (to.origin !== window.location.origin) {
          noPreview();
          return;
        }
        var address = url(to.pathname + to.search);
        var mime = p.mime || "";
        if (mime.indexOf("image/") === 0) {
          var img = document.createElement("img");
          img.className = "image-view";
          img.alt = name;
          img.src = address;
          li.replaceChild(img, wait);
          viewed("image");
          return;
        }
        if (p.type === "text") {
          fetch(address, { credentials: credentials }).then(function (r) {
            if (!r.ok) { throw new Refusal(r.status); }
            return r.text();
          }).then(function (text) {
            var pre = document.createElement("pre");
            pre.className = "text-view";
            pre.textContent = text;
            li.replaceChild(pre, wait);
            viewed("text");
          }, noPreview);
          return;
        }
        var v = document.createElement("a");
        v.className = "view";
        v.href = address;
        v.target = "_blank";
        v.rel = "noopener noreferrer";
        v.textContent = "View";
        li.replaceChild(v, wait);
        viewed("link");
      }
      // A preview still being made is asked for again a while later (a few minutes at most).
      function preview(tries) {
        return call("GET", base + "/preview/" + encodeURIComponent(id)).then(function (p) {
          var link = p && (p.link || p.pdf);
          if (link) {
            shown(p, link);
          } else if (p && p.status === "processing" && tries > 0) {
            wait.textContent = "Preview being prepared.";
            window.setTimeout(function () { preview(tries - 1); }, 3000);
          } else {
            noPreview();
          }
        }, noPreview);
      }
      preview(60);
      return li;
    }).catch(function () {
      li.textContent = "A file that cannot be shown right now.";
      return li;
    });
  }

  function sources() {
    return call("GET", base + "/sources").then(function (list) {
      var items = (list && list.data) || [];
      show("sources", items.length > 0);
      return Promise.all(items.map(source)).then(function (lis) {
        var ul = $("source-list");
        lis.forEach(function (li) { ul.appendChild(li); });
      });
    }, function () { show("sources", false); });
  }

  // One chosen file on the progress list.
  function row(file) {
    var li = document.createElement("li");
    var name = document.createElement("span");
    name.className = "name";
    name.textContent = file.name;
    var bar = document.createElement("progress");
    bar.max = Math.max(1, file.size);
    bar.value = 0;
    var state = document.createElement("span");
    state.className = "meta state";
    state.textContent = "waiting";
    li.appendChild(name);
    li.appendChild(document.createTextNode(" "));
    li.appendChild(bar);
    li.appendChild(document.createTextNode(" "));
    li.appendChild(state);
    $("progress").appendChild(li);
    return { li: li, bar: bar, state: state };
  }

  // Sends one file: opens an upload session, then its chunks in order.
  function sendFile(file, r) {
    var total = Math.max(1, Math.ceil(file.size / chunkSize));
    r.state.textContent = "starting";
    return call("POST", base + "/actions/initiateUpload", {
      filename: file.name, totalSize: file.size, totalChunks: total
    }).then(function (upload) {
      var index = 0;
      function next() {
        index += 1;
        if (index > total) {
          r.bar.value = r.bar.max;
          r.state.textContent = "sent";
          r.li.className = "sent";
          return null;
        }
        var piece = file.slice((index - 1) * chunkSize, Math.min(file.size, index * chunkSize));
        var body = new FormData();
        body.append("compressionMode", "NORMAL");
        body.append("compressionSize", String(piece.size));
        body.append("originalSize", String(piece.size));
        body.append("index", String(index));
        body.append("lastChunk", index === total ? "true" : "false");
        body.append("content", piece, file.name);
        r.state.textContent = "chunk " + index + " of " + total;
        // The chunk endpoint is the common one; the reference says whose session it is.
        return call("POST", upload.uri + "?ref=" + encodeURIComponent(reference), body).then(function () {
          r.bar.value = Math.min(file.size, index * chunkSize);
          return next();
        });
      }
      return next();
    });
  }

  function upload(event) {
    event.preventDefault();
    var input = $("files");
    var chosen = input.files ? Array.prototype.slice.call(input.files) : [];
    if (chosen.length === 0) {
      say("upload-status", "Choose one or more files first.", true);
      return;
    }
    if (current && typeof current.remaining === "number" && chosen.length > current.remaining) {
      say("upload-status", "This request takes " + current.remaining + " more file(s); choose fewer.", true);
      return;
    }
    var large = maxSize > 0 && chosen.filter(function (f) { return f.size > maxSize; })[0];
    if (large) {
      say("upload-status", "The file " + large.name + " is larger than the maximum upload size (" + sizeText(maxSize) + ").", true);
      return;
    }
    $("send").disabled = true;
    input.disabled = true;
    var rows = chosen.map(row);
    var chain = Promise.resolve();
    var sent = 0;
    chosen.forEach(function (file, i) {
      chain = chain.then(function () {
        say("upload-status", "Sending file " + (i + 1) + " of " + chosen.length + "…", false);
        return sendFile(file, rows[i]).then(function () { sent += 1; });
      });
    });
    chain.then(function () {
      say("upload-status", sent + " file(s) sent.", false);
      root.setAttribute("data-uploaded", String(Number(root.getAttribute("data-uploaded") || 0) + sent));
    }, function (e) {
      rows.forEach(function (r) {
        if (r.li.className !== "sent") {
          r.state.textContent = "not sent";
          r.li.className = "failed";
        }
      });
      if (e.code === "ERR_ENTITY_REQUEST_FILE_EXPIRED" || e.code === "ERR_ENTITY_DELETED") {
        end(stateOf(e));
        return;
      }
      say("upload-status", "Not every file could be sent: " + e.message, true);
    }).then(function () {
      input.value = "";
      input.disabled = false;
      $("send").disabled = false;
      return refresh().catch(function (e) { end(stateOf(e)); });
    });
  }

  function reply(event) {
    event.preventDefault();
    var button = $("reply-send");
    button.disabled = true;
    say("reply-status", "Sending…", false);
    call("POST", base + "/reply", { body: $("reply-body").value }).then(function () {
      $("reply-body").value = "";
      say("reply-status", "", false);
      show("reply-form", false);
      show("replied", true);
      root.setAttribute("data-replied", "true");
    }, function (e) {
      if (e.code === "ERR_ENTITY_REQUEST_FILE_EXPIRED" || e.code === "ERR_ENTITY_DELETED") {
        end(stateOf(e));
        return;
      }
      if (e.code === "ERR_ENTITY_REQUEST_FILE_NO_FILE_UPLOADED") {
        say("reply-status", "Send at least one file before you reply.", true);
      } else {
        say("reply-status", "The reply could not be sent: " + e.message, true);
      }
    }).then(function () { button.disabled = false; });
  }

  // Reads the request and shows it, or why it does not open.
  function open() {
    return call("GET", base).then(function (rf) {
      render(rf);
      return sources();
    }, function (e) {
      if (e.code === "ERR_AUTH_REQUEST_FILE") {
        askCode();
      } else {
        end(stateOf(e));
      }
    }).then(function () {
      root.setAttribute("data-ready", "true");
    });
  }

  $("upload-form").addEventListener("submit", upload);
  $("reply-form").addEventListener("submit", reply);
  $("send-code").addEventListener("click", sendCode);
  $("code-form").addEventListener("submit", verify);
  show("noscript-note", false);
  open();
})();
