"""State a server keeps beyond one request: SSE events for resumption, tasks, and the
sessions several workers share (in memory, or in Redis through ``redis_store``)."""
