"""`/api/` (printed in `make dev`'s banner) is the API's index, for anonymous callers too: its parts and the
documentation, each a link that answers, and nothing about the caller or the data."""

from __future__ import annotations

import pytest

from portal.api_index import PARTS


@pytest.mark.django_db
def test_the_index_links_every_part_and_the_docs_for_anyone(client, admin_api):
    answer = client.get("/api/")
    assert answer.status_code == 200 and answer["Content-Type"] == "application/json; charset=utf-8"
    index = answer.json()
    assert index["docs"]["openapi"]["url"] == "http://testserver/api/schema/"
    assert index["docs"]["docs_ui"]["url"] == "http://testserver/api/schema/ui/"
    assert [part["name"] for part in index["parts"]] == [name for name, _, _ in PARTS]
    assert {"pools", "workflows", "configs", "quotas", "usage", "teams"} <= {part["name"] for part in index["parts"]}
    urls = [*(d["url"] for d in index["docs"].values()), *(p["url"] for p in index["parts"])]
    assert all(url.startswith("http://testserver/api/") for url in urls), urls  # every link absolute
    configs = next(part["url"] for part in index["parts"] if part["name"] == "configs")
    assert configs == "http://testserver/api/configs/{config_type}" and "{name}" in index["url_templates"]
    for url in urls:
        path = url.removeprefix("http://testserver").replace("{config_type}", "POOL")
        assert admin_api.get(path).status_code == 200, url
    body = answer.content.decode()
    assert "(pool, backend, role, …)" in body and "\\u" not in body  # read in a browser: no escapes
    assert "admin" not in answer.content.decode().lower().replace("admin's", "")  # nothing of who exists


def test_the_index_answers_only_reads(client):
    assert client.post("/api/").status_code == 405
