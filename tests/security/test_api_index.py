"""`/api/` (printed in `make dev`'s banner) is the API's index, for anonymous callers too: its parts and the
documentation, each a link that answers, and nothing about the caller or the data."""

from __future__ import annotations

import pytest

from portal.api_index import PARTS


@pytest.mark.django_db
def test_the_index_links_every_part_and_the_docs_for_anyone(client, admin_api):
    answer = client.get("/api/")
    assert answer.status_code == 200 and answer["Content-Type"] == "application/json"
    index = answer.json()
    assert index["docs"]["openapi"]["url"] == "http://testserver/api/schema/"
    assert index["docs"]["docs_ui"]["url"] == "http://testserver/api/schema/ui/"
    assert [part["name"] for part in index["parts"]] == [name for name, _, _ in PARTS]
    assert {"pools", "workflows", "configs", "quotas", "usage", "teams"} <= {part["name"] for part in index["parts"]}
    for url in [*(d["url"] for d in index["docs"].values()), *(p["url"] for p in index["parts"])]:
        if "{" not in url:
            assert admin_api.get(url.removeprefix("http://testserver")).status_code == 200, url
    assert "admin" not in answer.content.decode().lower().replace("admin's", "")  # nothing of who exists


def test_the_index_answers_only_reads(client):
    assert client.post("/api/").status_code == 405
