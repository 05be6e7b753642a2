"""Server-Sent Events: writing events, and an incremental parser for reading them."""

from __future__ import annotations

from dataclasses import dataclass


def event(data: bytes, event_id: str | None = None, retry_ms: int | None = None) -> bytes:
    """One SSE event carrying a JSON frame (which never contains a newline)."""
    head = b""
    if event_id is not None:
        head += b"id: " + event_id.encode() + b"\n"
    if retry_ms is not None:
        head += b"retry: %d\n" % retry_ms
    if data:
        return head + b"event: message\ndata: " + data + b"\n\n"
    return head + b"data: \n\n"  # a priming event: an id (and retry) and no message


KEEPALIVE = b": keep-alive\n\n"


@dataclass
class Event:
    data: str
    id: str | None
    event: str
    retry: int | None


class Parser:
    """Feed it lines (without their line ending); it returns events as they complete."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._id: str | None = None
        self._event = ""
        self._retry: int | None = None
        self.last_id: str | None = None
        self.retry_ms: int | None = None

    def line(self, line: str) -> Event | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "event":
            self._event = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
            self.retry_ms = self._retry
        return None

    def _dispatch(self) -> Event | None:
        if self._id is not None:
            self.last_id = self._id
        found = Event("\n".join(self._data), self._id, self._event or "message", self._retry)
        self._data, self._id, self._event, self._retry = [], None, "", None
        if not found.data and found.id is None and found.retry is None:
            return None
        return found
