-- wrk script: POST /token grant_type=client_credentials against the oidc-peer
-- (client_secret_basic). The body is checked for an access token, as the Coffer token scenarios
-- check theirs, so the load generator does the same work per request.
--
-- Environment: BENCH_PEER_BASIC (base64 of "client_id:client_secret").
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

wrk.method = "POST"
wrk.path = "/token"
wrk.body = "grant_type=client_credentials"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Authorization"] = "Basic " .. (os.getenv("BENCH_PEER_BASIC") or "")

function response(status, headers, body)
  record(status == 200 and (body or ""):find('"access_token"', 1, true) ~= nil, status, body)
end
