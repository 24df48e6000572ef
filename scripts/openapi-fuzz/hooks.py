"""schemathesis hooks for scripts/openapi-fuzz.sh: they keep the fuzzer's own credentials alive.

- `DELETE /rest/devices/me/actions/logout` ends the session of the token it is called with, so
  a call of it that carries the fuzzer's token gets a fresh token of its own instead (the
  password grant of the fuzzer's client). Calls without a token, or with a spoilt one, go as
  generated.
- The fuzzer's OAuth client is the one its tokens come from: a PUT or DELETE of it (its id shows
  in `GET /rest/clients/me`) would disable or remove the fuzzer's access mid-run, so such a call
  is sent for another id instead.
"""

import json
import os
import urllib.parse
import urllib.request

import schemathesis

BASE = os.environ["COFFER_FUZZ_BASE"]
CLIENT_ID = os.environ["COFFER_FUZZ_CLIENT_ID"]
MAIN = "Bearer " + os.environ["COFFER_FUZZ_TOKEN"]


def fresh_token() -> str:
    form = urllib.parse.urlencode(
        {
            "grant_type": "password",
            "client_id": CLIENT_ID,
            "client_secret": os.environ["COFFER_FUZZ_CLIENT_SECRET"],
            "username": os.environ["COFFER_FUZZ_USERNAME"],
            "password": os.environ["COFFER_FUZZ_PASSWORD"],
        }
    ).encode()
    req = urllib.request.Request(
        BASE + "/oauth/token",
        data=form,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    with urllib.request.urlopen(req) as r:
        return json.load(r)["access_token"]


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    path, method = case.operation.path, case.method.upper()
    if path == "/rest/devices/me/actions/logout":
        headers = case.headers or {}
        for name in list(headers):
            if name.lower() == "authorization" and headers[name] == MAIN:
                headers[name] = "Bearer " + fresh_token()
        case.headers = headers
    if path == "/rest/clients/{id}" and method in ("PUT", "DELETE"):
        if (case.path_parameters or {}).get("id") == CLIENT_ID:
            case.path_parameters["id"] = "not-the-fuzzers-client"
