"""`mcpgen run`: find the :class:`~mcpgen.Server` a Python file or module defines."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import sysconfig
import traceback
from pathlib import Path
from types import ModuleType

from mcpgen.runtime.server.server import Server


class LoadError(Exception):
    """The target cannot be loaded or names no single Server: one line, exit code 2."""


def split_target(target: str) -> tuple[str, str | None]:
    """``FILE`` or ``FILE:NAME`` (or ``package.module:NAME``) into its two parts. A colon
    that is part of the path (``C:\\server.py``) is not taken as the separator."""
    where, sep, name = target.rpartition(":")
    if sep and name.isidentifier() and where and not Path(target).exists():
        return where, name
    return target, None


def _where_raised(exc: BaseException) -> str:
    """``file:line`` of the deepest frame of the user's own code in ``exc``'s traceback
    (not Python's library, not an installed package, not the import machinery)."""
    library = {sysconfig.get_path(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    frames = traceback.extract_tb(exc.__traceback__)
    own = [
        f
        for f in frames
        if not f.filename.startswith("<") and not any(f.filename.startswith(path) for path in library if path)
    ]
    frame = (own or frames)[-1] if (own or frames) else None
    if frame is None:
        return ""
    name = Path(frame.filename)
    with contextlib.suppress(ValueError):
        name = name.relative_to(Path.cwd())
    return f"{name}:{frame.lineno}"


def _import_failed(where: str, exc: Exception) -> LoadError:
    """What the user's module raised while it was imported, as one line that keeps the
    class and the place (``KeyError: 'DATABASE_URL'`` alone reads like our error)."""
    place = _where_raised(exc)
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    at = f"{place}: " if place else ""
    return LoadError(f"{at}{detail} (raised while importing {where}; --debug for the traceback)")


def load_module(where: str, debug: bool = False) -> ModuleType:
    """Import a ``.py`` file (its folder first on sys.path, so its sibling imports work)
    or a module by dotted name. A file is imported under its own name, never as
    ``__main__``, so that its ``if __name__ == "__main__":`` block does not run. What the
    module raises becomes a :class:`LoadError` naming its class and place (``debug``: the
    exception itself, for its traceback)."""
    path = Path(where)
    if where.endswith(".py") or path.exists():
        if not path.is_file():
            raise LoadError(f"no such file: {where}")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location(path.stem, path.resolve())
        if spec is None or spec.loader is None:
            raise LoadError(f"cannot import {where}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            if debug:
                raise
            raise _import_failed(where, exc) from exc
        return module
    if "." not in sys.path and "" not in sys.path:
        sys.path.insert(0, "")  # `mcpgen run pkg.server` from the project's folder
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as exc:
        if exc.name is not None and where.startswith(exc.name):
            raise LoadError(f"no such file or module: {where}") from None
        if debug:
            raise
        raise _import_failed(where, exc) from exc
    except Exception as exc:
        if debug:
            raise
        raise _import_failed(where, exc) from exc


def find_server(module: ModuleType, name: str | None, label: str) -> Server:
    """The Server named ``name``, or the only module-level Server."""
    if name is not None:
        found = getattr(module, name, None)
        if not isinstance(found, Server):
            what = "nothing" if found is None else type(found).__name__
            raise LoadError(f"{label}:{name} is {what}, not an mcpgen.Server")
        return found
    servers = sorted(key for key, value in vars(module).items() if isinstance(value, Server))
    if not servers:
        raise LoadError(f"{label} defines no mcpgen.Server at module level (looked at every module-level variable)")
    if len(servers) > 1:
        raise LoadError(f"{label} defines several Servers ({', '.join(servers)}): pick one with {label}:{servers[0]}")
    server: Server = getattr(module, servers[0])
    return server


def load_server(target: str, *, quiet_stdout: bool = False, debug: bool = False) -> Server:
    """Load ``target`` and find its Server. ``quiet_stdout``: what the module prints while
    it is imported goes to stderr (on stdio, stdout carries the protocol only)."""
    where, name = split_target(target)
    redirect = contextlib.redirect_stdout(sys.stderr) if quiet_stdout else contextlib.nullcontext()
    with redirect:
        module = load_module(where, debug)
    return find_server(module, name, where)
