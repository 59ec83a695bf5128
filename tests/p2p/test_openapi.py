"""``GET /openapi.json``: one documented path per client method, generated from the registry."""

from __future__ import annotations

import re
from typing import Any

import httpx
import jsonschema
from netsupport import ADMIN_TOKEN, InMemoryStore, NodeFactory, client_token
from openapi_spec_validator import validate

from mnemonet.p2p.registry import ALIASES, REGISTRY


def _result_schema(document: dict[str, Any], path: str) -> dict[str, Any]:
    """The 200 body schema of ``path``, with the document's components reachable for its $refs."""
    body = document["paths"][path]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    return {**body, "components": document["components"]}


async def test_openapi_documents_every_client_method_and_validates(make_node: NodeFactory) -> None:
    node = await make_node({"store"}, providers={"store": InMemoryStore()})
    async with httpx.AsyncClient(base_url=node.url) as http:
        document = (await http.get("/openapi.json")).json()
    validate(document)  # raises on anything OpenAPI 3.1 does not allow, unresolved $refs included
    client = {name for name, r in REGISTRY.items() if r.scope is not None}
    peer_only = set(REGISTRY) - client
    paths = set(document["paths"])
    assert {f"/v1/{name}" for name in client | set(ALIASES)} | {"/health"} == paths
    assert not {f"/v1/{name}" for name in peer_only} & paths
    assert "/v1/{method}" not in paths
    assert document["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer", "description": "A client token: run_node.py token create NAME"}
    observe = document["paths"]["/v1/observe"]["post"]
    assert observe["security"] == [{"bearer": []}]
    assert observe["requestBody"]["content"]["application/json"]["schema"]["required"] == ["text"]
    assert "by" not in document["paths"]["/v1/revoke_token"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]["properties"]  # the node fills it from the token


async def test_real_answers_match_their_documented_schemas(make_node: NodeFactory) -> None:
    node = await make_node({"store"}, providers={"store": InMemoryStore()})
    headers = {"authorization": f"Bearer {ADMIN_TOKEN}"}
    async with httpx.AsyncClient(base_url=node.url, headers=headers) as http:
        document = (await http.get("/openapi.json")).json()
        calls = {"/v1/observe": {"text": "the sky is blue"}, "/v1/remember": {"query": "what colour is the sky"},
                 "/v1/stats": {}, "/v1/get_recent_observations": {"limit": 5}, "/v1/recent": {"limit": 5}}
        for path, body in calls.items():
            response = await http.post(path, json=body)
            assert response.status_code == 200, response.text
            jsonschema.validate(response.json(), _result_schema(document, path))
        error = await http.post("/v1/observe", json={"text": 5})
    assert error.status_code == 400
    jsonschema.validate(error.json(), {**document["components"]["schemas"]["Error"]})


async def test_short_aliases_answer_as_the_methods_they_name(make_node: NodeFactory) -> None:
    node = await make_node({"store"}, providers={"store": InMemoryStore()})
    writer = {"authorization": f"Bearer {ADMIN_TOKEN}"}
    no_read = {"authorization": f"Bearer {client_token('write')}"}
    async with httpx.AsyncClient(base_url=node.url, headers=writer) as http:
        await http.post("/v1/observe", json={"text": "the sky is blue"})
        recent = await http.post("/v1/recent", json={"limit": 5})
        long = await http.post("/v1/get_recent_observations", json={"limit": 5})
        contradictions = await http.post("/v1/contradictions", json={})
        refused = await http.post("/v1/recent", json={}, headers=no_read)
        unknown = await http.post("/v1/recnt", json={})
    assert recent.status_code == 200 and recent.json() == long.json()
    assert [o["text"] for o in recent.json()["result"]] == ["the sky is blue"]
    assert contradictions.status_code == 200 and contradictions.json() == {"result": []}
    assert refused.status_code == 403 and "get_recent_observations needs" in refused.json()["error"]["message"]
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == "unknown method 'recnt'; GET /openapi.json lists every method"


async def test_docs_work_offline_every_asset_served_by_the_node(make_node: NodeFactory) -> None:
    # Swagger UI from a CDN is a blank page on a machine without internet: the page, its script and its
    # stylesheet all come from the node, and the page points at this node's /openapi.json.
    node = await make_node({"store"}, providers={"store": InMemoryStore()})
    async with httpx.AsyncClient(base_url=node.url) as http:
        page = await http.get("/docs")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert assets and all(a.startswith("/") and not a.startswith("//") for a in assets), assets
        assert "/openapi.json" in page.text
        script = next(a for a in assets if a.endswith(".js"))
        js = await http.get(script)
        assert js.status_code == 200 and "SwaggerUIBundle" in js.text
        # Swagger UI 5 reads OpenAPI 3.1 (the document's version); 4 shows "Unable to render this definition".
        assert re.search(r'PACKAGE_VERSION:"5\.', js.text)
        css = await http.get(next(a for a in assets if a.endswith(".css")))
        assert css.status_code == 200 and "swagger-ui" in css.text
