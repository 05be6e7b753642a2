"""The client side: ``client`` (``Client``), ``session`` (a connection in either era,
``ClientSession.send_request`` being the path of every outgoing request), ``era`` (which era
to open in), ``stateless`` (the 2026-07-28 envelope and input rounds), ``tasks``, ``skills``,
``cache`` and ``listen``."""
