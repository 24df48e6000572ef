-- wrk script: GET /rest/scim/Users?filter=... with a SCIM bearer token (the URL given to wrk
-- carries the query). A response counts as good when it is 200 and the streamed ListResponse
-- ended with the expected itemsPerPage, so a listing cut short midway is counted as an error.
--
-- Environment: BENCH_SCIM_TOKEN (the SCIM token), BENCH_SCIM_ITEMS (the expected itemsPerPage).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

wrk.headers["Authorization"] = "Bearer " .. (os.getenv("BENCH_SCIM_TOKEN") or "")

local tail = '"itemsPerPage":' .. (os.getenv("BENCH_SCIM_ITEMS") or "?") .. "}"

function response(status, headers, body)
  body = body or ""
  record(status == 200 and body:sub(-#tail) == tail, status, body)
end
