"""Everything revision-specific: the committed bindings of each serving revision
(``v2025_11_25`` serves the handshake era, ``v2026_07_28`` the stateless era) and the
generated table of which method exists in which revision (``availability``).

Nothing is imported here: a bindings package costs tens of milliseconds to import, so each
is imported only by code that speaks its era.
"""
