// The files of a web form through the public upload (docs/web-forms.md): when the person has
// chosen files, the page starts a submission, sends each file in chunks to
// `POST /rest/public/mail/{id}/actions/initiateUpload` and the sessions it opens, then sends the
// form with the submission's id and reference instead of the files. Without this script the
// files travel in the form's own POST.
"use strict";
(function () {
  var form = document.getElementById("web-form");
  if (!form || !window.fetch || !window.FormData) {
    return;
  }
  var files = document.getElementById("files");
  var button = document.getElementById("submit");
  var status = document.getElementById("upload-status");
  var version = form.getAttribute("data-api-version");

  function say(text, failed) {
    status.textContent = text;
    status.className = failed ? "error" : "meta";
  }

  function restUrl(path, reference) {
    return "/" + path.replace(/^\/+/, "") + "?ref=" + encodeURIComponent(reference) +
      "&apiVersion=" + encodeURIComponent(version);
  }

  // The JSON of a response, or a refusal with the server's message.
  function answer(r) {
    return r.text().then(function (text) {
      var body = null;
      try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
      if (!r.ok) {
        var message = body && body.errors && body.errors[0] && body.errors[0].message;
        throw new Error(message || ("The server answered " + r.status + "."));
      }
      return body;
    });
  }

  function start() {
    return fetch(form.getAttribute("data-start"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-Coffer-CSRF": form.elements["csrf"].value },
    }).then(answer);
  }

  function sendFile(s, file, number, count) {
    var chunk = Math.max(1, s.chunkSize);
    var total = Math.max(1, Math.ceil(file.size / chunk));
    return fetch(restUrl(s.initiateUri, s.ref), {
      method: "POST",
      credentials: "omit",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ filename: file.name, totalSize: file.size, totalChunks: total }),
    }).then(answer).then(function (upload) {
      var index = 0;
      function next() {
        index += 1;
        if (index > total) {
          return null;
        }
        var piece = file.slice((index - 1) * chunk, Math.min(file.size, index * chunk));
        var body = new FormData();
        body.append("compressionMode", "NORMAL");
        body.append("compressionSize", String(piece.size));
        body.append("originalSize", String(piece.size));
        body.append("index", String(index));
        body.append("lastChunk", index === total ? "true" : "false");
        body.append("content", piece, file.name);
        say("Sending file " + number + " of " + count + " (" +
          Math.round(100 * (index - 1) / total) + "%)…", false);
        return fetch(restUrl(upload.uri, s.ref), {
          method: "POST",
          credentials: "omit",
          body: body,
        }).then(answer).then(next);
      }
      return next();
    });
  }

  var carried = [];

  function carry(name, value) {
    var input = document.createElement("input");
    input.type = "hidden";
    input.name = name;
    input.value = value;
    form.appendChild(input);
    carried.push(input);
  }

  form.addEventListener("submit", function (event) {
    var chosen = files && files.files ? Array.prototype.slice.call(files.files) : [];
    if (chosen.length === 0) {
      return;
    }
    event.preventDefault();
    button.disabled = true;
    // Files chosen again replace those of a submission the page kept from an earlier try.
    ["submission", "submissionRef"].forEach(function (name) {
      var kept = form.querySelector("input[type=hidden][name=" + name + "]");
      if (kept) {
        kept.remove();
      }
    });
    say("Starting…", false);
    start().then(function (s) {
      if (chosen.length > s.maxFiles) {
        throw new Error("At most " + s.maxFiles + " files can be sent with the form.");
      }
      var large = chosen.filter(function (f) { return f.size > s.maxFileSize; })[0];
      if (large) {
        throw new Error("The file " + large.name + " is larger than the maximum upload size (" +
          s.maxFileSize + " bytes).");
      }
      var chain = Promise.resolve();
      chosen.forEach(function (file, i) {
        chain = chain.then(function () { return sendFile(s, file, i + 1, chosen.length); });
      });
      return chain.then(function () {
        carry("submission", s.emailId);
        carry("submissionRef", s.ref);
        files.disabled = true;
        say("Sending the form…", false);
        // Not `form.submit()`: the button named `submit` shadows it.
        HTMLFormElement.prototype.submit.call(form);
      });
    }).catch(function (e) {
      carried.forEach(function (input) { input.remove(); });
      carried = [];
      files.disabled = false;
      button.disabled = false;
      say("The files could not be sent: " + e.message, true);
    });
  });
})();
