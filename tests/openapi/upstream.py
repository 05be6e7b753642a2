"""Upstream APIs for the tests of ``mcpgen openapi``: a FastAPI application that serves its
own ``/openapi.json`` (what the end-to-end tests generate a server from), a recording
upstream that answers every request with what it received, and running either under
uvicorn in a thread on a free loopback port."""

from __future__ import annotations

import base64
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Annotated, Any

import uvicorn
from fastapi import Body, Cookie, FastAPI, File, Form, Header, HTTPException, Query, Request, Response, UploadFile
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, Field

# A 1x1 PNG: the binary answer the image endpoint sends.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
API_KEY = "k3y-for-tests"


class NewPet(BaseModel):
    name: str
    tag: str | None = None
    age: int = Field(default=0, ge=0)


class Pet(NewPet):
    id: int


class Page(BaseModel):
    items: list[Pet]
    next_cursor: str | None = None


def pets_app() -> FastAPI:
    """A small pet store using the constructs the generator must handle: path, query (a
    list), header and cookie parameters; JSON, form and multipart bodies; JSON object,
    JSON array, text, image and empty answers; errors; cursor and Link pagination; an
    API key."""
    app = FastAPI(title="Pets for tests", version="1.0.0")
    pets: dict[int, Pet] = {1: Pet(id=1, name="Rex", tag="dog", age=3), 2: Pet(id=2, name="Tom", tag="cat", age=5)}

    @app.get("/pets", operation_id="listPets", summary="List pets", tags=["pets"])
    def list_pets(
        tag: Annotated[list[str] | None, Query()] = None, limit: Annotated[int, Query(ge=1, le=100)] = 10
    ) -> list[Pet]:
        found = [p for p in pets.values() if tag is None or p.tag in tag]
        return found[:limit]

    @app.post("/pets", operation_id="createPet", summary="Create a pet", status_code=201, tags=["pets"])
    def create_pet(pet: NewPet) -> Pet:
        created = Pet(id=max(pets) + 1, **pet.model_dump())
        pets[created.id] = created
        return created

    @app.get("/pets/{pet_id}", operation_id="getPet", summary="Get a pet", tags=["pets"])
    def get_pet(pet_id: int, x_trace: Annotated[str | None, Header()] = None) -> Pet:
        if pet_id not in pets:
            raise HTTPException(404, f"no pet {pet_id}")
        return pets[pet_id]

    @app.delete("/pets/{pet_id}", operation_id="deletePet", status_code=204, tags=["pets"])
    def delete_pet(pet_id: int) -> Response:
        pets.pop(pet_id, None)
        return Response(status_code=204)

    @app.get("/paged", operation_id="pagedPets", summary="Pets a page at a time", tags=["pages"])
    def paged(cursor: str | None = None) -> Page:
        ids = sorted(pets)
        start = int(cursor) if cursor else 0
        nxt = str(start + 1) if start + 1 < len(ids) else None
        return Page(items=[pets[i] for i in ids[start : start + 1]], next_cursor=nxt)

    @app.get(
        "/linked",
        operation_id="linkedPets",
        summary="Pets by Link header",
        tags=["pages"],
        openapi_extra={"x-mcp-pagination": {"style": "link"}},
    )
    def linked(request: Request, page: int = 1) -> JSONResponse:
        ids = sorted(pets)
        answer = JSONResponse([pets[ids[page - 1]].model_dump()] if page <= len(ids) else [])
        if page < len(ids):
            answer.headers["link"] = f'<{request.url.replace_query_params(page=page + 1)}>; rel="next"'
        return answer

    @app.get("/readme", operation_id="readme", response_class=PlainTextResponse, tags=["files"])
    def readme() -> str:
        return "pets: a store for tests\n"

    @app.get(
        "/photo",
        operation_id="photo",
        responses={200: {"content": {"image/png": {}}}},
        response_class=Response,
        tags=["files"],
    )
    def photo() -> Response:
        return Response(PNG, media_type="image/png")

    @app.post("/upload", operation_id="upload", summary="Upload a file", tags=["files"])
    async def upload(file: Annotated[UploadFile, File()], note: Annotated[str, Form()]) -> dict[str, Any]:
        data = await file.read()
        return {"size": len(data), "note": note, "first": data[:4].hex()}

    @app.post("/login", operation_id="login", tags=["forms"])
    def login(user: Annotated[str, Form()], remember: Annotated[bool, Form()] = False) -> dict[str, Any]:
        return {"user": user, "remember": remember}

    @app.get("/session", operation_id="session", tags=["forms"])
    def session(sid: Annotated[str | None, Cookie()] = None) -> dict[str, Any]:
        return {"sid": sid}

    @app.get("/secret", operation_id="secret", tags=["auth"])
    def secret(x_api_key: Annotated[str | None, Header()] = None) -> dict[str, Any]:
        if x_api_key != API_KEY:
            raise HTTPException(401, "bad key")
        return {"ok": True}

    @app.put("/echo/{word}", operation_id="echo", tags=["echo"])
    def echo(word: str, body: Annotated[dict[str, Any], Body()], n: int = 1) -> dict[str, Any]:
        return {"word": word, "n": n, "body": body}

    return app


def recording_app() -> Any:
    """An ASGI app answering every request with what it received, as JSON."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        import json

        seen = {
            "method": scope["method"],
            "path": scope["path"],
            "raw_path": scope.get("raw_path", b"").decode("latin-1"),
            "query": scope["query_string"].decode("latin-1"),
            "headers": {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]},
            "body": base64.b64encode(body).decode(),
        }
        data = json.dumps(seen).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": data})

    return app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serving(app: Any, timeout: float = 15.0) -> Iterator[str]:
    """``app`` under uvicorn in a thread on a free loopback port; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise TimeoutError(f"uvicorn did not start on port {port}")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
