"""Where Streamable HTTP keeps the events of each SSE stream, so a client that lost its
connection can ask for what it missed (``Last-Event-ID``)."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable


class EventStore(Protocol):
    async def store(self, stream_id: str, frame: bytes) -> str:
        """Keep ``frame`` as the next event of ``stream_id``; return its event id."""
        ...

    async def replay_after(self, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream an event id belongs to and the events after it, or None if the id is
        unknown (or too old)."""
        ...

    async def forget(self, stream_id: str) -> None:
        """Drop a stream's events (its session ended)."""
        ...


@runtime_checkable
class SharedEventStore(EventStore, Protocol):
    """An event store that other worker processes read too (e.g. Redis): a stream written
    by the worker that serves the request can be resumed through any worker.

    The writer marks a stream's end (:meth:`end`) once its last event is stored, and a
    reader on another worker :meth:`follow` s it: the events stored after an id, then the
    ones stored later, as they come, until that end. Event ids must be unguessable, since
    the ids are all a reader needs."""

    async def end(self, stream_id: str) -> None:
        """No event will follow on ``stream_id`` (its response is stored, or it was cancelled)."""
        ...

    def follow(
        self, event_id: str, *, writer: str | None = None, missing_ok: bool = False
    ) -> AsyncIterator[list[tuple[str, bytes]]]:
        """Batches of the events after ``event_id``: those stored already, then new ones as
        they are stored; ends after the stream's end, or when the stream is forgotten
        (``missing_ok``: a stream not there yet, or gone, is waited for). Raises
        :class:`~mcpgen.runtime.stores.shared_store.WriterGone` once the worker writing it
        (``writer``, else the one its first entry names) has stopped (its lease lapsed)
        while the stream is quiet."""
        ...

    def name_of(self, stream_id: str) -> str:
        """The stream's name in the store (its events' ids are ``<name>/<n>``)."""
        ...

    def adopt(self, stream_id: str, name: str, request: bytes | None = None) -> None:
        """Write ``stream_id``'s events under ``name`` (chosen by another worker, which
        follows it), labelled with the JSON id of the ``request`` it answers, if any."""
        ...

    async def read(self, event_id: str, block: float) -> list[tuple[str, bytes | None]]:
        """The events after ``event_id`` (``<name>/<n>``; the stream need not exist yet),
        waiting up to ``block`` seconds for one: (event id, frame), the frame None for
        the stream's end; [] when none came."""
        ...


class MemoryEventStore:
    """Keeps the last ``per_stream`` events of every stream in memory.

    Event ids are ``<stream id>/<sequence>``: unique across the session's streams, and
    they say which stream to replay, as the spec suggests.
    """

    def __init__(self, per_stream: int = 1000) -> None:
        self.per_stream = per_stream
        self._streams: dict[str, deque[tuple[int, bytes]]] = {}
        self._next: dict[str, int] = {}

    async def store(self, stream_id: str, frame: bytes) -> str:
        seq = self._next.get(stream_id, 0)
        self._next[stream_id] = seq + 1
        events = self._streams.get(stream_id)
        if events is None:
            events = self._streams[stream_id] = deque(maxlen=self.per_stream)
        events.append((seq, frame))
        return f"{stream_id}/{seq}"

    async def replay_after(self, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        stream_id, _, seq_text = event_id.rpartition("/")
        if not seq_text.isdigit() or stream_id not in self._next:
            return None
        seq = int(seq_text)
        events = self._streams.get(stream_id, deque())
        if events and events[0][0] > seq + 1:
            return None  # we no longer have everything after it
        return stream_id, [(f"{stream_id}/{s}", frame) for s, frame in events if s > seq]

    async def forget(self, stream_id: str) -> None:
        self._streams.pop(stream_id, None)
        self._next.pop(stream_id, None)
