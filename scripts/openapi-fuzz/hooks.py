"""schemathesis hooks for scripts/openapi-fuzz.sh: they keep the fuzzer's own credentials alive.

- `DELETE /rest/devices/me/actions/logout` ends the session of the token it is called with, so
  every call of it gets a token of its own (the password grant of the fuzzer's client).
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


@schemathesis.auth(refresh_interval=None).apply_to(path="/rest/devices/me/actions/logout")
class SessionOfItsOwn:
    def get(self, case, ctx):
        return fresh_token()

    def set(self, case, data, ctx):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    if case.operation.path == "/rest/clients/{id}" and case.method.upper() in ("PUT", "DELETE"):
        if (case.path_parameters or {}).get("id") == CLIENT_ID:
            case.path_parameters["id"] = "not-the-fuzzers-client"
