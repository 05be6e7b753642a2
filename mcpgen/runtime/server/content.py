"""What a handler returns, as the protocol's content: a tool's content blocks, a resource's
contents, a prompt's messages. Plain values (str, bytes, lists, structs) become the blocks a
client expects; the protocol's own blocks pass through."""

from __future__ import annotations

import base64
from typing import Any

import msgspec
from msgspec import UNSET

from mcpgen.protocol.v2025_11_25 import (
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    PromptMessage,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime(data: bytes) -> str | None:
    for magic, mime in _IMAGE_MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def to_content(value: Any) -> list[ContentBlock]:
    """Content blocks for what a tool returned without an output schema."""
    if value is None:
        return []
    if isinstance(value, str):  # the most common return, checked first
        return [TextContent(text=value)]
    if isinstance(value, (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)):
        return [value]
    if isinstance(value, (bytes, bytearray)):
        data = base64.b64encode(value).decode()
        mime = image_mime(bytes(value))
        if mime is not None:
            return [ImageContent(data=data, mime_type=mime)]
        blob = BlobResourceContents(uri="mcpgen:result", blob=data, mime_type="application/octet-stream")
        return [EmbeddedResource(resource=blob)]
    if isinstance(value, (list, tuple)) and all(
        isinstance(v, (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource, str, bytes))
        for v in value
    ):
        return [block for v in value for block in to_content(v)]
    # json is imported on first use, not before every server's first answer (json.dumps,
    # not msgspec: its spacing is the text clients have always seen).
    import json

    return [TextContent(text=json.dumps(msgspec.to_builtins(value)))]


def to_contents(uri: str, value: Any, mime_type: Any) -> list[TextResourceContents | BlobResourceContents]:
    """Resource contents for what a resource function returned."""
    mime = mime_type if mime_type is not UNSET else UNSET
    if isinstance(value, (TextResourceContents, BlobResourceContents)):
        return [value]
    if isinstance(value, list) and all(isinstance(v, (TextResourceContents, BlobResourceContents)) for v in value):
        return value
    if isinstance(value, (bytes, bytearray)):
        return [BlobResourceContents(uri=uri, blob=base64.b64encode(value).decode(), mime_type=mime)]
    if isinstance(value, str):
        return [TextResourceContents(uri=uri, text=value, mime_type=mime)]
    import json  # as in to_content: not imported before a server's first answer

    text = json.dumps(msgspec.to_builtins(value))
    return [TextResourceContents(uri=uri, text=text, mime_type=mime if mime is not UNSET else "application/json")]


def to_messages(value: Any) -> list[PromptMessage]:
    """Prompt messages for what a prompt function returned."""
    if isinstance(value, PromptMessage):
        return [value]
    if isinstance(value, str):
        return [PromptMessage(role="user", content=TextContent(text=value))]
    if isinstance(value, (list, tuple)):
        out: list[PromptMessage] = []
        for item in value:
            out.extend(to_messages(item))
        return out
    if isinstance(value, (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)):
        return [PromptMessage(role="user", content=value)]
    raise TypeError(f"a prompt cannot return {type(value).__name__}")


def text_or_bytes(data: bytes) -> str | bytes:
    """Text when the bytes are UTF-8, else the bytes (as files.read_file reads a file)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data
