"""RFC 6570 URI Templates, as used by MCP resource templates.

``UriTemplate("file:///{path}")`` parses a template once.  ``expand`` is the
full RFC 6570 algorithm (levels 1-4).  ``match`` goes the other way, for a
server routing ``resources/read``: it returns the variable values that expand
to a given URI, or ``None``.

Matching rules, where expansion alone does not pin the answer down:

* A non-exploded variable matches a string; an exploded one (``{/list*}``,
  ``{?list*}``) matches a list.  Exploded associative arrays and
  non-exploded lists (``{list}`` -> ``red,green,blue``) are not matched.
* ``{x,y}`` style expressions are positional: trailing variables may be
  missing.  ``{?x,y}`` / ``{;x,y}`` / ``{&x,y}`` name their variables, so any
  of them may be missing; the ones that are missing are left out of the result.
  Present ones must still be in template order, as expansion writes them.
* Where one value could run into the next (``{name}.{ext}``,
  ``{+path}/here``) the earlier variable takes as much as it can.
* Variables with a prefix modifier (``{var:3}``) match the truncated text; if
  the variable also appears unmodified, that occurrence wins.
* The URI must be plain ASCII with well-formed ``%XX`` escapes, as produced by
  expansion; captured values are percent-decoded as UTF-8.

Cost: the template is compiled once to an anchored regex that matches in time
linear in the URI for the usual shapes, including ambiguous ones such as
``{name}.{ext}``, ``{+dir}/{file}``, ``{a}.{b}.{c}`` or ``{a}{+b}``.  Some
contrived templates, where three or more variables (typically reserved or
exploded ones, side by side) can each run into the next, may still take
quadratic time on hostile input.

Security: matched values are percent-decoded, so ``{path}`` can yield
``..`` and ``{+path}`` can yield ``../../etc/passwd`` (and ``%2F`` becomes
``/``).  Callers that turn values into file paths, SQL, etc. must validate them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple
from urllib.parse import quote, unquote

__all__ = ["UriTemplate", "UriTemplateError"]


class UriTemplateError(ValueError):
    """A malformed template (or a value that cannot be expanded into it)."""


# --- character sets (RFC 3986 section 2) ------------------------------------

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED = frozenset(":/?#[]@!$&'()*+,;=")
_RESERVED_SAFE = "".join(sorted(_RESERVED))
_PCT = "%[0-9A-Fa-f][0-9A-Fa-f]"
_PCT_SPLIT = re.compile(f"({_PCT})")
# Everything an expansion can produce.  Checked before matching so the
# per-variable patterns never see stray characters or broken escapes.
_URI = re.compile(f"(?:[{re.escape(''.join(sorted(_UNRESERVED | _RESERVED)))}]|{_PCT})*+")
_VARCHARS = re.compile(r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+")
_MAX_LENGTH = re.compile(r"[1-9][0-9]{0,3}")


def _encode(text: str, allow_reserved: bool) -> str:
    """Percent-encode ``text``: the U set, or U+R for ``{+var}``/``{#var}``/literals."""
    if not allow_reserved:
        return quote(text, safe="")  # leaves only unreserved characters alone
    # Reserved expansion keeps existing %XX triplets (RFC 6570 section 3.2.3).
    pieces = _PCT_SPLIT.split(text)
    return "".join(p if i % 2 else quote(p, safe=_RESERVED_SAFE) for i, p in enumerate(pieces))


# --- parsed template ---------------------------------------------------------


class _Op(NamedTuple):
    """One row of the RFC 6570 appendix A table."""

    first: str
    sep: str
    named: bool
    ifemp: str
    allow_reserved: bool


_OPS: dict[str, _Op] = {
    "": _Op("", ",", False, "", False),
    "+": _Op("", ",", False, "", True),
    "#": _Op("#", ",", False, "", True),
    ".": _Op(".", ".", False, "", False),
    "/": _Op("/", "/", False, "", False),
    ";": _Op(";", ";", True, "", False),
    "?": _Op("?", "&", True, "=", False),
    "&": _Op("&", "&", True, "=", False),
}
_RESERVED_OPS = frozenset("=,!@|")  # reserved for future extensions by RFC 6570


@dataclass(frozen=True)
class _VarSpec:
    name: str
    explode: bool
    prefix: int | None


@dataclass(frozen=True)
class _Expression:
    op: str
    specs: tuple[_VarSpec, ...]


def _parse(template: str) -> list[str | _Expression]:
    parts: list[str | _Expression] = []
    pos = 0
    while pos < len(template):
        if template[pos] == "}":
            raise UriTemplateError(f"unmatched '}}' at position {pos} in {template!r}")
        if template[pos] != "{":
            end = min(i for i in (template.find("{", pos), template.find("}", pos), len(template)) if i >= 0)
            parts.append(template[pos:end])
            pos = end
            continue
        end = template.find("}", pos + 1)
        nested = template.find("{", pos + 1)
        if end < 0 or 0 <= nested < end:
            raise UriTemplateError(f"unclosed '{{' at position {pos} in {template!r}")
        parts.append(_parse_expression(template, pos + 1, end))
        pos = end + 1
    return parts


def _parse_expression(template: str, start: int, end: int) -> _Expression:
    def fail(what: str, at: int) -> UriTemplateError:
        return UriTemplateError(f"{what} at position {at} in {template!r}")

    body = template[start:end]
    if not body:
        raise fail("empty expression", start - 1)
    op = body[0] if body[0] in _OPS else ""
    if body[0] in _RESERVED_OPS:
        raise fail(f"reserved operator {body[0]!r}", start)
    specs: list[_VarSpec] = []
    offset = start + len(op)
    for raw in body[len(op) :].split(","):
        name, explode, prefix = raw, False, None
        if raw.endswith("*"):
            name, explode = raw[:-1], True
        elif ":" in raw:
            name, _, digits = raw.partition(":")
            if not _MAX_LENGTH.fullmatch(digits):
                raise fail(f"bad prefix length {digits!r} (want 1-9999)", offset + len(name) + 1)
            prefix = int(digits)
        # varname = varchar *( ["."] varchar ), varchar = ALPHA / DIGIT / "_" / pct-encoded
        if not all(_VARCHARS.fullmatch(label) for label in name.split(".")):
            raise fail(f"bad variable name {name!r}", offset)
        specs.append(_VarSpec(name, explode, prefix))
        offset += len(raw) + 1
    return _Expression(op, tuple(specs))


# --- expansion ---------------------------------------------------------------

_Value = str | list[str] | list[tuple[str, str]]


def _normalize(value: object) -> _Value | None:
    """Map a Python value onto RFC 6570's string / list / associative array; None = undefined."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        pairs = [(str(k), str(v)) for k, v in value.items() if v is not None]
        return pairs or None  # RFC 6570 section 2.3: empty composites are undefined
    if isinstance(value, (list, tuple)):
        items = [str(v) for v in value if v is not None]
        return items or None
    return str(value)


def _expand_expression(expr: _Expression, values: Mapping[str, object]) -> str:
    op = _OPS[expr.op]
    out: list[str] = []
    for spec in expr.specs:
        value = _normalize(values.get(spec.name))
        if value is not None:
            out.append(_expand_var(op, spec, value))
    return op.first + op.sep.join(out) if out else ""


def _expand_var(op: _Op, spec: _VarSpec, value: _Value) -> str:
    def enc(text: str) -> str:
        return _encode(text, op.allow_reserved)

    def named(name: str, text: str) -> str:
        if not op.named:
            return text
        return f"{name}={text}" if text else name + op.ifemp

    if isinstance(value, str):
        return named(spec.name, enc(value if spec.prefix is None else value[: spec.prefix]))
    if spec.prefix is not None:
        raise UriTemplateError(f"prefix modifier ':{spec.prefix}' does not apply to composite variable {spec.name!r}")
    if not spec.explode:
        flat = [enc(x) for item in value for x in ((item,) if isinstance(item, str) else item)]
        return named(spec.name, ",".join(flat))
    if all(isinstance(item, str) for item in value):
        return op.sep.join(named(spec.name, enc(str(item))) for item in value)
    # Exploded associative array: each pair becomes key=value (named ops reuse `named`).
    pairs = [item for item in value if isinstance(item, tuple)]
    if op.named:
        return op.sep.join(named(enc(k), enc(v)) for k, v in pairs)
    return op.sep.join(f"{enc(k)}={enc(v)}" for k, v in pairs)


# --- matching: the template becomes a tiny regex syntax tree -------------------
#
# Linear time: Python's `re` backtracks, so the tree is built to leave it no
# expensive choices.  There are no nested repetitions (an exploded list is one
# flat run, split afterwards).  A capture whose characters cannot start what
# follows it is made possessive (`*+`): giving characters back could never
# help, so the result is the same, without the backtracking.  A capture that can
# run into what follows backtracks over its own run; `_narrow` then keeps the
# next capture from rescanning the text once per step of that backtracking
# (with regex conditionals where that depends on which optional group matched).
# `_compile` tracks which captures can end up right before each one.
# Neither shortcut changes results (tests compare against a plain greedy regex).


@dataclass(eq=False)
class _Cap:
    group: str
    chars: frozenset[str]  # literal characters allowed; %XX escapes always are
    tokens: tuple[str, ...] = ()  # extra regex alternatives (separators inside an exploded run)
    token_firsts: frozenset[str] = frozenset()
    lead: str = ""  # regex (a lookahead) that the run must start with
    # Set by `_narrow`: up to its first character outside `absorbable`, the
    # value cannot contain `stop` ("" = that part is empty; None = no limit).
    stop: str | None = None
    absorbable: frozenset[str] = frozenset()
    # Stricter versions to match instead (see `_narrow`): the first whose group
    # took part wins; a None group is the fallback.
    variants: list[tuple[str | None, _Cap]] = field(default_factory=list)

    def atom_firsts(self) -> frozenset[str]:
        """Characters that can start one more step of the run."""
        return self.chars | self.token_firsts | {"%"}

    def first(self) -> frozenset[str]:
        versions = [v for _, v in self.variants] or [self]
        return frozenset().union(*(v.own_first() for v in versions))

    def own_first(self) -> frozenset[str]:
        """``first`` for this version alone, ignoring `variants`."""
        if self.stop is None:
            return self.atom_firsts()
        head = (self.chars & self.absorbable) | {"%"} if self.stop else frozenset()
        return head | (self.chars - self.absorbable)

    def always_empty(self) -> bool:
        return all(v.stop == "" and v.chars <= v.absorbable for v in [v for _, v in self.variants] or [self])


@dataclass
class _Opt:
    body: list[_Node]


@dataclass
class _Alt:
    branches: list[list[_Node]]


_Node = str | _Cap | _Opt | _Alt  # str = literal text


def _first(node: _Node) -> tuple[frozenset[str], bool]:
    """Characters a non-empty match of ``node`` can start with, and whether it can be empty."""
    if isinstance(node, str):
        return frozenset(node[:1]), not node
    if isinstance(node, _Cap):
        return node.first(), True
    if isinstance(node, _Opt):
        return _first_seq(node.body)[0], True
    chars: frozenset[str] = frozenset()
    nullable = False
    for branch in node.branches:
        c, n = _first_seq(branch)
        chars, nullable = chars | c, nullable or n
    return chars, nullable


def _first_seq(nodes: list[_Node]) -> tuple[frozenset[str], bool]:
    chars: frozenset[str] = frozenset()
    for node in nodes:
        c, nullable = _first(node)
        chars |= c
        if not nullable:
            return chars, False
    return chars, True


def _emit_seq(nodes: list[_Node], follow: frozenset[str]) -> str:
    """Regex for ``nodes``; ``follow`` = characters that can start whatever comes after."""
    out: list[str] = []
    for node in reversed(nodes):
        out.append(_emit(node, follow))
        chars, nullable = _first(node)
        follow = chars | follow if nullable else chars
    return "".join(reversed(out))


def _emit(node: _Node, follow: frozenset[str]) -> str:
    if isinstance(node, str):
        return re.escape(node)
    if isinstance(node, _Opt):
        return f"(?:{_emit_seq(node.body, follow)})?"
    if isinstance(node, _Alt):
        return "(?:" + "|".join(_emit_seq(b, follow) for b in node.branches) + ")"
    if not node.variants:
        return f"(?P<{node.group}>{_run(node, follow)})"
    *conditional, (_, fallback) = node.variants
    body = _run(fallback, follow)
    for group, variant in reversed(conditional):
        body = f"(?({group}){_run(variant, follow)}|{body})"
    return f"(?P<{node.group}>{body})"


def _run(cap: _Cap, follow: frozenset[str]) -> str:
    repeat = "*" if cap.atom_firsts() & follow else "*+"
    if cap.stop is None:
        return cap.lead + _atom(cap.chars, cap.tokens) + repeat
    # Narrowed: (?:(?!stop)A)* (?:N B*)?  -- A = what `before` could have taken
    # instead, N = the first character it could not, B = anything after that.
    rest = cap.chars - cap.absorbable
    head_chars = (cap.chars & cap.absorbable) - {cap.stop}
    head_repeat = "*" if (head_chars | {"%"}) & (follow | rest) else "*+"
    head = ""
    if len(cap.stop) == 1:
        head = _atom(head_chars) + head_repeat
    elif cap.stop:
        head = f"(?:(?!{re.escape(cap.stop)}){_atom(cap.chars & cap.absorbable)})" + head_repeat
    return head + (f"(?:{_char_class(rest)}{_atom(cap.chars)}{repeat})?" if rest else "")


def _atom(chars: frozenset[str], tokens: tuple[str, ...] = ()) -> str:
    """One step of a value: an allowed character, a %XX escape, or a token."""
    return "(?:" + "|".join(([_char_class(chars)] if chars else []) + [_PCT, *tokens]) + ")"


_RANGES = [(r, frozenset(chr(c) for c in range(ord(r[0]), ord(r[2]) + 1))) for r in ("A-Z", "a-z", "0-9")]


def _char_class(chars: frozenset[str]) -> str:
    """``[...]`` for ``chars``, with letters and digits as ranges to keep patterns readable."""
    ranges = [r for r, members in _RANGES if members <= chars]
    covered = frozenset().union(*(members for r, members in _RANGES if r in ranges))
    return "[" + "".join(ranges) + "".join(re.escape(c) for c in sorted(chars - covered)) + "]"


def _narrow(before: _Cap, between: str, after: _Cap) -> _Cap | None:
    """``after``, restricted to what greedy matching leaves it when ``before`` comes first.

    ``before`` takes as much as it can and ``between`` is the literal text in
    between.  Say ``after`` matched text T holding ``between`` at j, with
    ``before`` able to take all of T[:j]: then ``before`` could have taken
    ``between`` + T[:j] instead, and greedy matching prefers that.  So up to
    the first character ``before`` cannot take, T never holds ``between``.
    Saying so in the regex keeps ``after`` from rescanning the same text once
    per position ``before`` backtracks to (quadratic for ``{name}.{ext}``).
    """
    if before.tokens or after.tokens or after.stop is not None:
        return None
    # `before` may itself be narrowed (a chain such as {a}.{b}-{c}); then an
    # earlier variable takes what it cannot.  Where `before` starts empty
    # because its neighbour takes everything, that neighbour must take this too.
    absorbable = before.chars
    for _, v in before.variants:
        if v.stop == "":
            absorbable &= v.absorbable
    if not set(between) <= absorbable:
        return None
    return replace(after, stop=between, absorbable=absorbable)


def _restrict(after: _Cap, prefix: str, earlier: list[tuple[_Cap, bool, str | None]]) -> None:
    """Give ``after`` one variant per capture that may end up right before it.

    ``earlier`` holds (capture, is it optional, literal text since), oldest
    first: the newest one that took part is the one right before ``after``.
    """
    variants: list[tuple[str | None, _Cap]] = []
    for before, optional, between in reversed(earlier):
        narrowed = None if between is None else _narrow(before, between + prefix, after)
        variants.append((before.group if optional else None, narrowed or after))
        if not optional:
            break
    else:
        variants.append((None, after))  # none of them took part
    if len({(v.stop, v.absorbable) for _, v in variants}) == 1:
        variants = [(None, variants[0][1])]  # the same whichever came first
    if any(v is not after for _, v in variants):
        after.variants = variants


@dataclass(frozen=True)
class _Slot:
    """How to turn one regex group back into a variable value."""

    var: str
    split: str | None = None  # exploded run: the text between items
    strip: str = ""  # prefix to drop from each item (";list*" items start with "=")
    drop_first: bool = False  # the run starts with a separator
    prefix: bool = False  # from a {var:N} occurrence
    marker: bool = False  # empty group: the variable is present (";name" with no value)


@dataclass
class _Compiler:
    slots: dict[str, _Slot] = field(default_factory=dict)

    def cap(
        self,
        spec: _VarSpec,
        chars: frozenset[str],
        *,
        split: str | None = None,
        tokens: tuple[str, ...] = (),
        token_firsts: str = "",
        lead: str = "",
        strip: str = "",
        drop_first: bool = False,
        marker: bool = False,
    ) -> _Cap:
        group = f"g{len(self.slots)}"
        self.slots[group] = _Slot(spec.name, split, strip, drop_first, spec.prefix is not None, marker)
        return _Cap(group, chars, tokens, frozenset(token_firsts), lead, "" if marker else None)

    def item(self, op: _Op, spec: _VarSpec, many: bool) -> _Cap:
        """Capture for one variable of an unnamed operator (its own separator not included)."""
        if op.allow_reserved:
            # {+a,b}: a literal ',' could belong to either, so keep it as the separator.
            chars = _UNRESERVED | _RESERVED
            if many and not spec.explode:
                chars -= {","}
        else:
            # {.a} cannot hold a '.', since that is unreserved and would not be escaped.
            chars = _UNRESERVED - {"."} if op.first == "." else _UNRESERVED
        if spec.explode:
            return self.cap(spec, chars | {op.sep}, split=op.sep)
        return self.cap(spec, chars)

    def named_item(self, op: _Op, spec: _VarSpec, lead_char: str) -> tuple[list[_Node], _Cap]:
        """``;name=value`` / ``?name=value`` / ``&name=value`` for one variable, and a
        capture that takes part exactly when the item is there."""
        name = spec.name
        if not spec.explode:
            cap = self.cap(spec, _UNRESERVED)
            if op.ifemp == "=":  # ? and &: "name=" even when empty
                return [f"{lead_char}{name}=", cap], cap
            # ;: a bare "name" when empty, so mark that the name was seen.
            marker = self.cap(spec, frozenset(), marker=True)
            return [f"{lead_char}{name}", marker, _Opt(["=", cap])], marker
        if op.ifemp == "=":
            # ?list=a&list=b: one flat run in which "&list=" is a separator token.
            sep = f"&{name}="
            cap = self.cap(spec, _UNRESERVED, split=sep, tokens=(re.escape(sep),), token_firsts="&")
            return [f"{lead_char}{name}=", cap], cap
        # ;list=a;list;list=b: items are ";list" (empty) or ";list=value".  "="
        # only right after the name, and ";list" never directly before a value char.
        esc = re.escape(f";{name}")
        tokens = (f"{esc}(?!{_char_class(_UNRESERVED | {'%'})})", f"(?<={esc})=")
        cap = self.cap(
            spec,
            _UNRESERVED,
            split=f";{name}",
            tokens=tokens,
            token_firsts=";=",
            lead=f"(?={esc})",
            strip="=",
            drop_first=True,
        )
        return [cap], cap

    def expression(self, expr: _Expression) -> tuple[list[_Node], list[_Step]]:
        """Nodes for one expression, and its variables in order for `_narrow`."""
        op = _OPS[expr.op]
        specs = expr.specs
        many = len(specs) > 1
        if op.named:
            if op.first == op.sep:  # ";" and "&": each item is optional on its own
                items = [self.named_item(op, spec, op.sep) for spec in specs]
                return [_Opt(nodes) for nodes, _ in items], [_Step(None, cap, True) for _, cap in items]
            # "?": whichever variable comes first gets the "?"
            branches: list[list[_Node]] = []
            for i, spec in enumerate(specs):
                branch, presence = self.named_item(op, spec, op.first)
                branch += [_Opt(self.named_item(op, rest, op.sep)[0]) for rest in specs[i + 1 :]]
                branches.append(branch)
            # With one variable the expression is there exactly when it is; with
            # more, no single group says so, so treat it as always there.
            return [_Opt([_Alt(branches)])], [_Step(None, presence, not many)]
        caps = [self.item(op, spec, many) for spec in specs]
        # The first variable carries the operator's prefix, the rest its separator.
        steps = [_Step(op.first if i == 0 else op.sep, cap, bool(op.first) or i > 0) for i, cap in enumerate(caps)]
        if op.first == op.sep:  # "." and "/": every variable carries its own prefix
            return [_Opt([op.sep, cap]) for cap in caps], steps
        # "", "+", "#": positional, comma-separated; trailing variables may be missing.
        nodes: list[_Node] = [caps[0]]
        nodes += [_Opt([op.sep, cap]) for cap in caps[1:]]
        if op.first:  # "#": the whole thing is absent when every variable is
            return [_Opt([op.first, *nodes])], steps
        return nodes, steps


class _Step(NamedTuple):
    """One variable of an expression, in order, as `_compile` sees it."""

    prefix: str | None  # literal text right before it; None: `_narrow` cannot use it
    cap: _Cap
    optional: bool  # may be absent (then `cap` does not take part)


def _compile(parts: list[str | _Expression]) -> tuple[re.Pattern[str], list[tuple[str, _Slot]]]:
    compiler = _Compiler()
    nodes: list[_Node] = []
    # Captures that may end up right before the next one: (capture, is it
    # optional, literal text since or None if `_narrow` cannot use it), oldest
    # first.  Whatever is always there hides everything before it.
    earlier: list[tuple[_Cap, bool, str | None]] = []
    for part in parts:
        if isinstance(part, str):
            literal = _encode(part, allow_reserved=True)
            nodes.append(literal)
            earlier = [(c, optional, None if b is None else b + literal) for c, optional, b in earlier]
            continue
        expr_nodes, steps = compiler.expression(part)
        nodes += expr_nodes
        for step in steps:
            if step.prefix is not None:
                _restrict(step.cap, step.prefix, earlier)
                if not step.prefix and not step.optional and step.cap.always_empty():
                    continue  # always matches nothing (e.g. {b} in {+a}{b}): see through it
            entry = (step.cap, step.optional, None if step.prefix is None else "")
            earlier = earlier + [entry] if step.optional else [entry]
    regex = re.compile(_emit_seq(nodes, frozenset()))
    # Unmodified occurrences first, so they win over {var:N} ones; markers only fill gaps.
    slots = sorted(compiler.slots.items(), key=lambda item: (item[1].marker, item[1].prefix))
    return regex, slots


def _decode(text: str) -> str:
    return unquote(text, errors="strict")


# --- public class --------------------------------------------------------------


class UriTemplate:
    """A parsed RFC 6570 URI template that can expand values and match URIs."""

    __slots__ = ("template", "variables", "_parts", "_regex", "_slots")

    def __init__(self, template: str) -> None:
        self.template = template
        self._parts = _parse(template)
        names = [spec.name for part in self._parts if isinstance(part, _Expression) for spec in part.specs]
        self.variables: tuple[str, ...] = tuple(dict.fromkeys(names))
        self._regex, self._slots = _compile(self._parts)

    def expand(self, values: Mapping[str, object]) -> str:
        """Expand the template (RFC 6570 levels 1-4).

        Values may be strings (other scalars are ``str()``-ed), lists/tuples, or
        mappings; ``None``, empty lists and empty mappings count as undefined.
        """
        out: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(_encode(part, allow_reserved=True))
            else:
                out.append(_expand_expression(part, values))
        return "".join(out)

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """Return values that expand to exactly ``uri``, or None (see the module docstring)."""
        if not _URI.fullmatch(uri):
            return None
        m = self._regex.fullmatch(uri)
        if m is None:
            return None
        result: dict[str, str | list[str]] = {}
        try:
            for group, slot in self._slots:
                raw = m.group(group)
                if raw is None or slot.var in result:
                    continue
                if slot.split is None:
                    result[slot.var] = _decode(raw)
                    continue
                items = raw.split(slot.split)
                if slot.drop_first:
                    items = items[1:]
                result[slot.var] = [_decode(item.removeprefix(slot.strip)) for item in items]
        except UnicodeDecodeError:  # %XX escapes that are not UTF-8
            return None
        return result

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UriTemplate):
            return NotImplemented
        return self.template == other.template

    def __hash__(self) -> int:
        return hash(self.template)
