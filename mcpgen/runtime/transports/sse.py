"""Server-Sent Events: writing events, and an incremental parser for reading them (the
client side: the parser holds one event at a time, its data at most ``max_event`` bytes)."""

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
MAX_ID = 1024  # characters of an event id the parser keeps (it goes back in Last-Event-ID)


@dataclass
class Event:
    data: str
    id: str | None
    event: str
    retry: int | None


class EventTooLarge(Exception):
    """An event whose data grew past the parser's limit (a server that never ends one)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"an event of the server's stream exceeds the limit of {limit} bytes")
        self.limit = limit


class Parser:
    """Feed it lines (without their line ending); it returns events as they complete.
    ``max_event``: the most data (in characters of its lines) one event may gather
    before :class:`EventTooLarge` is raised (None: no limit)."""

    def __init__(self, max_event: int | None = None) -> None:
        self.max_event = max_event
        self._size = 0
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
            self._size += len(value) + 1
            if self.max_event is not None and self._size > self.max_event:
                raise EventTooLarge(self.max_event)
            self._data.append(value)
        elif name == "id" and "\0" not in value and len(value) <= MAX_ID:
            self._id = value  # a longer id is not one a resumption could send back
        elif name == "event":
            self._event = value
        elif name == "retry" and value.isascii() and value.isdigit() and len(value) <= 9:
            self._retry = int(value)
            self.retry_ms = self._retry
        return None

    def _dispatch(self) -> Event | None:
        if self._id is not None:
            self.last_id = self._id
        found = Event("\n".join(self._data), self._id, self._event or "message", self._retry)
        self._data, self._id, self._event, self._retry, self._size = [], None, "", None, 0
        if not found.data and found.id is None and found.retry is None:
            return None
        return found
