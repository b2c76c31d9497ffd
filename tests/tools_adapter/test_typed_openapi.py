"""Tests of the typed OpenAPI document (issue 30 item 7): the window's JSON schema and one typed
route per tool, so that a client generated from the document is typed and works."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

from fastapi.testclient import TestClient

from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.api.typed import STATE_COMPONENT, args_component
from smartflow_engine.tools_adapter.core import registry
from smartflow_engine.tools_adapter.core.schemas import input_schema
from tests.helpers.windows import load_window, window_dict

TOKENS = {"tok": "alice"}
AUTH = {"Authorization": "Bearer tok"}


def test_the_document_carries_the_window_schema_and_each_tools_arguments():
    doc = create_app(TOKENS).openapi()
    schemas = doc["components"]["schemas"]
    window = schemas[STATE_COMPONENT]
    assert {"window", "tasks"} <= set(window["properties"])
    ref = {"$ref": f"#/components/schemas/{STATE_COMPONENT}"}
    assert schemas["StateCall"]["properties"]["state"]["$ref"] == ref["$ref"]
    assert ref in schemas["SessionCreate"]["properties"]["state"]["anyOf"]
    for spec in registry.TOOLS:
        path = doc["paths"][f"/v1/sessions/{{session_id}}/tools/{spec.name}"]["post"]
        body = path["requestBody"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{args_component(spec.name)}"}
        expected = {**input_schema(spec.args_model), "title": args_component(spec.name)}
        assert schemas[args_component(spec.name)] == expected


def test_a_typed_route_answers_as_the_generic_call_and_refuses_the_same_way():
    client = TestClient(create_app(TOKENS))
    sid = client.post("/v1/sessions", headers=AUTH, json={"state": window_dict()}).json()[
        "session_id"
    ]
    other = client.post("/v1/sessions", headers=AUTH, json={"state": window_dict()}).json()[
        "session_id"
    ]
    args = {"task_id": 3, "day": 6, "slot_start": 3}
    typed = client.post(f"/v1/sessions/{sid}/tools/place", headers=AUTH, json=args).json()
    generic = client.post(
        f"/v1/sessions/{other}/calls", headers=AUTH, json={"tool": "place", "args": args}
    ).json()
    assert typed["reply"] == generic["reply"] and typed["status"] == "ok"
    bad = client.post(f"/v1/sessions/{sid}/tools/place", headers=AUTH, json={"task_id": "x"})
    assert bad.status_code == 200 and bad.json()["error_code"] == "invalid_args"
    junk = client.post(f"/v1/sessions/{sid}/tools/place", headers=AUTH, content=b"{oops")
    assert junk.status_code == 422 and junk.json()["error_code"] == "invalid_request"


def test_a_generated_client_is_typed_and_drives_a_session(tmp_path: Path):
    """Tests the document the way a backend uses it: openapi-python-client generates a client,
    whose typed models (the window, a tool's arguments) create a session and place a task."""
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(create_app(TOKENS).openapi()), encoding="utf-8")
    name = f"sf_client_{uuid.uuid4().hex[:8]}"
    tool = shutil.which("openapi-python-client", path=str(Path(sys.executable).parent))
    assert tool, "openapi-python-client is a dev dependency"
    done = subprocess.run(
        [tool, "generate", "--path", str(spec), "--meta", "none", "--output-path", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        gen = importlib.import_module(name)
        models = importlib.import_module(f"{name}.models")
        create = importlib.import_module(f"{name}.api.sessions.create_session_v1_sessions_post")
        place = importlib.import_module(f"{name}.api.tools.call_place")
        http = TestClient(create_app(TOKENS), headers=AUTH)
        client = gen.Client(base_url="http://testserver").set_httpx_client(http)
        state = models.ScheduleState.from_dict(load_window().to_dict())
        made = create.sync(client=client, body=models.SessionCreate(state=state))
        assert made is not None and made.session_id
        out = place.sync(
            session_id=made.session_id,
            client=client,
            body=models.PlaceArgs(task_id=3, day=6, slot_start=3),
        )
        assert out is not None and out.status == "ok"
        assert out.reply.startswith("已将 [3]复习线代 放到第6天")
    finally:
        sys.path.remove(str(tmp_path))


def test_a_typed_route_refuses_a_body_that_is_not_text():
    client = TestClient(create_app(TOKENS))
    sid = client.post("/v1/sessions", headers=AUTH, json={"state": window_dict()}).json()[
        "session_id"
    ]
    out = client.post(f"/v1/sessions/{sid}/tools/move", headers=AUTH, content=b"\x80\xff")
    assert out.status_code == 422 and out.json()["error_code"] == "invalid_request"
