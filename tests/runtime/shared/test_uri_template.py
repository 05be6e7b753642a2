"""RFC 6570 URI templates: expansion (levels 1-4), matching, errors, and matching cost."""

from __future__ import annotations

import itertools
import random
import time
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpgen.runtime.shared import uri_template
from mcpgen.runtime.shared.uri_template import UriTemplate, UriTemplateError

# Variables from RFC 6570 sections 1.2 and 3.2.
VALUES: dict[str, object] = {
    "count": ["one", "two", "three"],
    "dom": ["example", "com"],
    "dub": "me/too",
    "hello": "Hello World!",
    "half": "50%",
    "var": "value",
    "who": "fred",
    "base": "http://example.com/home/",
    "path": "/foo/bar",
    "list": ["red", "green", "blue"],
    "keys": {"semi": ";", "dot": ".", "comma": ","},
    "v": "6",
    "x": "1024",
    "y": "768",
    "empty": "",
    "empty_keys": {},
    "undef": None,
}

# Section 1.2, level by level.
LEVEL_1 = [
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
]
LEVEL_2 = [
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("X{#var}", "X#value"),
    ("X{#hello}", "X#Hello%20World!"),
]
LEVEL_3 = [
    ("map?{x,y}", "map?1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    ("X{.var}", "X.value"),
    ("X{.x,y}", "X.1024.768"),
    ("{/var}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
]
LEVEL_4 = [
    ("{var:3}", "val"),
    ("{var:30}", "value"),
    ("{list}", "red,green,blue"),
    ("{list*}", "red,green,blue"),
    ("{keys}", "semi,%3B,dot,.,comma,%2C"),
    ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
    ("{+path:6}/here", "/foo/b/here"),
    ("{+list}", "red,green,blue"),
    ("{+list*}", "red,green,blue"),
    ("{+keys}", "semi,;,dot,.,comma,,"),
    ("{+keys*}", "semi=;,dot=.,comma=,"),
    ("{#path:6}/here", "#/foo/b/here"),
    ("{#list}", "#red,green,blue"),
    ("{#list*}", "#red,green,blue"),
    ("{#keys}", "#semi,;,dot,.,comma,,"),
    ("{#keys*}", "#semi=;,dot=.,comma=,"),
    ("X{.var:3}", "X.val"),
    ("X{.list}", "X.red,green,blue"),
    ("X{.list*}", "X.red.green.blue"),
    ("X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
    ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
    ("{/var:1,var}", "/v/value"),
    ("{/list}", "/red,green,blue"),
    ("{/list*}", "/red/green/blue"),
    ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    ("{/keys}", "/semi,%3B,dot,.,comma,%2C"),
    ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
    ("{;hello:5}", ";hello=Hello"),
    ("{;list}", ";list=red,green,blue"),
    ("{;list*}", ";list=red;list=green;list=blue"),
    ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
    ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
    ("{?var:3}", "?var=val"),
    ("{?list}", "?list=red,green,blue"),
    ("{?list*}", "?list=red&list=green&list=blue"),
    ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
    ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
    ("{&var:3}", "&var=val"),
    ("{&list}", "&list=red,green,blue"),
    ("{&list*}", "&list=red&list=green&list=blue"),
    ("{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
    ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
]
# Section 3.2, the cases not already covered above (empty / undefined values etc.).
SECTION_3_2 = [
    ("{count}", "one,two,three"),
    ("{count*}", "one,two,three"),
    ("{/count}", "/one,two,three"),
    ("{/count*}", "/one/two/three"),
    ("{;count}", ";count=one,two,three"),
    ("{;count*}", ";count=one;count=two;count=three"),
    ("{?count}", "?count=one,two,three"),
    ("{?count*}", "?count=one&count=two&count=three"),
    ("{&count*}", "&count=one&count=two&count=three"),
    ("{half}", "50%25"),
    ("O{empty}X", "OX"),
    ("O{undef}X", "OX"),
    ("?{x,empty}", "?1024,"),
    ("?{x,undef}", "?1024"),
    ("?{undef,y}", "?768"),
    ("{+half}", "50%25"),
    ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
    ("{+base}index", "http://example.com/home/index"),
    ("O{+empty}X", "OX"),
    ("O{+undef}X", "OX"),
    ("up{+path}{var}/here", "up/foo/barvalue/here"),
    ("{#half}", "#50%25"),
    ("foo{#empty}", "foo#"),
    ("foo{#undef}", "foo"),
    ("{.who}", ".fred"),
    ("{.who,who}", ".fred.fred"),
    ("{.half,who}", ".50%25.fred"),
    ("www{.dom*}", "www.example.com"),
    ("X{.empty}", "X."),
    ("X{.undef}", "X"),
    ("X{.empty_keys}", "X"),
    ("X{.empty_keys*}", "X"),
    ("{/who}", "/fred"),
    ("{/who,who}", "/fred/fred"),
    ("{/half,who}", "/50%25/fred"),
    ("{/who,dub}", "/fred/me%2Ftoo"),
    ("{/var,empty}", "/value/"),
    ("{/var,undef}", "/value"),
    ("{;who}", ";who=fred"),
    ("{;half}", ";half=50%25"),
    ("{;empty}", ";empty"),
    ("{;v,empty,who}", ";v=6;empty;who=fred"),
    ("{;v,bar,who}", ";v=6;who=fred"),
    ("{;x,y,undef}", ";x=1024;y=768"),
    ("{?who}", "?who=fred"),
    ("{?half}", "?half=50%25"),
    ("{?x,y,undef}", "?x=1024&y=768"),
    ("{&who}", "&who=fred"),
    ("{&half}", "&half=50%25"),
]
EXPANSIONS = LEVEL_1 + LEVEL_2 + LEVEL_3 + LEVEL_4 + SECTION_3_2


@pytest.mark.parametrize(("template", "expected"), EXPANSIONS)
def test_rfc6570_expansion(template: str, expected: str) -> None:
    assert UriTemplate(template).expand(VALUES) == expected


def test_expansion_details() -> None:
    assert UriTemplate("{x}").expand({"x": 42}) == "42"
    assert UriTemplate("{x}").expand({}) == ""
    assert UriTemplate("{x}").expand({"x": []}) == ""
    assert UriTemplate("{x}").expand({"x": ("a", None, "b")}) == "a,b"
    assert UriTemplate("{x}").expand({"x": "caf\u00e9"}) == "caf%C3%A9"
    assert UriTemplate("{+x}").expand({"x": "a%2Fb%zz"}) == "a%2Fb%25zz"  # keeps valid triplets only
    assert UriTemplate("a b{x}").expand({"x": "1"}) == "a%20b1"  # literals are encoded too
    with pytest.raises(UriTemplateError, match="prefix"):
        UriTemplate("{list:2}").expand({"list": ["a", "b"]})


def test_attributes_and_identity() -> None:
    t = UriTemplate("db://{table}/{id}{?fields,table}")
    assert t.template == "db://{table}/{id}{?fields,table}"
    assert t.variables == ("table", "id", "fields")
    assert repr(t) == "UriTemplate('db://{table}/{id}{?fields,table}')"
    assert t == UriTemplate("db://{table}/{id}{?fields,table}")
    assert t != UriTemplate("db://{table}")
    assert t != "db://{table}/{id}{?fields,table}"
    assert len({t, UriTemplate(t.template)}) == 1
    assert UriTemplate("no variables").variables == ()


# --- matching ---------------------------------------------------------------

MATCHES = [
    # simple
    ("file:///{path}", "file:///readme.md", {"path": "readme.md"}),
    ("file:///{path}", "file:///", {"path": ""}),
    ("db://{table}/{id}", "db://users/42", {"table": "users", "id": "42"}),
    ("{x,hello,y}", "1024,Hello%20World%21,768", {"x": "1024", "hello": "Hello World!", "y": "768"}),
    ("map?{x,y}", "map?1024", {"x": "1024"}),  # positional: trailing variables may be missing
    # reserved: may span '/'
    ("file:///{+path}", "file:///a/b/c.txt", {"path": "a/b/c.txt"}),
    ("{+path}/here", "/foo/bar/here", {"path": "/foo/bar"}),
    ("{+path}/{name}", "a/b/c", {"path": "a/b", "name": "c"}),
    ("{+x,hello,y}", "1024,Hello%20World!,768", {"x": "1024", "hello": "Hello World!", "y": "768"}),
    ("up{+path}{var}/here", "up/foo/barvalue/here", {"path": "/foo/barvalue", "var": ""}),
    # fragment
    ("page{#section}", "page#intro", {"section": "intro"}),
    ("page{#section}", "page", {}),
    ("page{#section}", "page#a/b?c", {"section": "a/b?c"}),
    ("page{#section}", "page#a#b", {"section": "a#b"}),  # reserved expansion keeps '#'
    ("{#x,hello,y}", "#1024,Hello%20World!,768", {"x": "1024", "hello": "Hello World!", "y": "768"}),
    ("{#list*}", "#red,green,blue", {"list": ["red", "green", "blue"]}),
    # label
    ("X{.var}", "X.value", {"var": "value"}),
    ("X{.x,y}", "X.1024.768", {"x": "1024", "y": "768"}),
    ("www{.dom*}", "www.example.com", {"dom": ["example", "com"]}),
    ("X{.var}", "X", {}),
    # path segments
    ("{/var}", "/value", {"var": "value"}),
    ("{/who,dub}", "/fred/me%2Ftoo", {"who": "fred", "dub": "me/too"}),
    ("{/var,x}/here", "/value/1024/here", {"var": "value", "x": "1024"}),
    ("{/var,x}/here", "/value/here", {"var": "value"}),
    ("files{/list*}", "files/red/green/blue", {"list": ["red", "green", "blue"]}),
    ("files{/list*}", "files", {}),
    ("{/list*}/end", "/a/b/end", {"list": ["a", "b"]}),
    ("{/var:1,var}", "/v/value", {"var": "value"}),  # the unmodified occurrence wins
    # path-style parameters
    ("{;x,y}", ";x=1024;y=768", {"x": "1024", "y": "768"}),
    ("{;x,y,empty}", ";x=1024;y=768;empty", {"x": "1024", "y": "768", "empty": ""}),
    ("{;v,bar,who}", ";v=6;who=fred", {"v": "6", "who": "fred"}),
    ("{;list*}", ";list=red;list=green;list=blue", {"list": ["red", "green", "blue"]}),
    ("{;list*}", ";list=a;list;list=b", {"list": ["a", "", "b"]}),
    ("{;list*}{;listx}", ";list=a;listx=b", {"list": ["a"], "listx": "b"}),
    # form query, including absent optional parameters
    ("{?x,y}", "?x=1024&y=768", {"x": "1024", "y": "768"}),
    ("{?x,y}", "?y=768", {"y": "768"}),
    ("{?x,y}", "?x=1024", {"x": "1024"}),
    ("{?x,y}", "", {}),
    ("{?x,y,empty}", "?x=1024&y=768&empty=", {"x": "1024", "y": "768", "empty": ""}),
    ("{?list*}", "?list=red&list=green&list=blue", {"list": ["red", "green", "blue"]}),
    ("{?q,list*}", "?q=a&list=b&list=", {"q": "a", "list": ["b", ""]}),
    (
        "repo://{owner}/{repo}/issues{?state,labels}",
        "repo://octo/hello-world/issues?labels=bug",
        {"owner": "octo", "repo": "hello-world", "labels": "bug"},
    ),
    # query continuation
    ("?fixed=yes{&x}", "?fixed=yes&x=1024", {"x": "1024"}),
    ("?fixed=yes{&x}", "?fixed=yes", {}),
    ("{&x,y,empty}", "&x=1024&empty=", {"x": "1024", "empty": ""}),
    ("{&list*}", "&list=red&list=green", {"list": ["red", "green"]}),
    # explode for simple/reserved returns lists
    ("{list*}", "red,green,blue", {"list": ["red", "green", "blue"]}),
    ("{+list*}", "red,a/b", {"list": ["red", "a/b"]}),
    # ambiguous neighbours: the earlier variable takes as much as it can
    ("file:///{name}.{ext}", "file:///archive.tar.gz", {"name": "archive.tar", "ext": "gz"}),
    ("v{major}.{minor}.{patch}", "v1.2.3.4", {"major": "1.2", "minor": "3", "patch": "4"}),
    ("{/a}.{b}", ".x.y", {"b": "x.y"}),
    ("{a}-v{b}", "x-vy-z", {"a": "x", "b": "y-z"}),
    # percent-decoding
    ("file:///{path}", "file:///a%20b%2Fc", {"path": "a b/c"}),
    ("file:///{path}", "file:///caf%C3%A9", {"path": "caf\u00e9"}),
    ("file:///{path}", "file:///caf%c3%a9", {"path": "caf\u00e9"}),
    ("file:///{+path}", "file:///..%2F..%2Fetc/passwd", {"path": "../../etc/passwd"}),
    ("{?q}", "?q=50%25%20off", {"q": "50% off"}),
]


@pytest.mark.parametrize(("template", "uri", "expected"), MATCHES)
def test_match(template: str, uri: str, expected: dict[str, object]) -> None:
    assert UriTemplate(template).match(uri) == expected


NO_MATCHES = [
    ("file:///{path}", "http:///readme.md"),  # different scheme
    ("db://{table}/{id}", "db2://users/42"),
    ("http://example.com/{id}", "http://example.org/1"),  # different host
    ("users/{id}/profile", "users/1/settings"),  # different literal
    ("db://{table}/{id}", "db://users/42/extra"),  # extra trailing segment
    ("file:///{path}", "file:///a/b"),  # '/' inside {var}
    ("file:///{path}", "file:///a?b"),
    ("file:///{path}", "file:///a#b"),
    ("file:///{path}", "file:///a,b"),
    ("file:///{path}", "file:///a:b"),
    ("X{.var}", "X.a.b"),  # '.' inside a label
    ("{/var}", "/a/b"),
    ("{?x,y}", "?y=1&x=2"),  # expansion order is fixed
    ("{?x,y}", "?x=1?y=2"),
    ("{?x}", "?z=1"),
    ("{;x}", ";x=1=2"),
    ("{;list*}", ";listx"),
    ("{var}", "a b"),  # not a URI
    ("{var}", "caf\u00e9"),
    ("{var}", "50%"),  # broken escape
    ("{var}", "%zz"),
    ("{var}", "%FF"),  # not UTF-8
]


@pytest.mark.parametrize(("template", "uri"), NO_MATCHES)
def test_no_match(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


@pytest.mark.parametrize(
    ("template", "position"),
    [
        ("file:///{path", 8),  # unclosed
        ("file:///{a{b}", 8),  # unclosed before a nested '{'
        ("a}b", 1),  # stray '}'
        ("x{}", 1),  # empty expression
        ("{=x}", 1),  # reserved operators
        ("{!x}", 1),
        ("{|x}", 1),
        ("{@x}", 1),
        ("{a b}", 1),  # bad variable names
        ("{$x}", 1),
        ("{a..b}", 1),
        ("{.}", 2),
        ("{x,}", 3),
        ("{+}", 2),
        ("{a%2}", 1),
        ("{x:0}", 3),  # bad prefix lengths
        ("{x:10000}", 3),
        ("{x:}", 3),
        ("{x:3*}", 1),
        ("{x*:3}", 1),
    ],
)
def test_malformed_template(template: str, position: int) -> None:
    with pytest.raises(UriTemplateError, match=f"at position {position} in ") as info:
        UriTemplate(template)
    assert isinstance(info.value, ValueError)


def test_valid_unusual_templates() -> None:
    assert UriTemplate("{a.b,c_d,%20e,x:9999}").variables == ("a.b", "c_d", "%20e", "x")
    assert UriTemplate("").match("") == {}
    assert UriTemplate("no vars").match("no%20vars") == {}


# --- properties ---------------------------------------------------------------

# No reserved characters (and no '.', which a label cannot hold unescaped).
SAFE = st.text(st.characters(exclude_characters=":/?#[]@!$&'()*+,;=.%", exclude_categories=("Cs",)))
WORDS = st.text("abcXYZ019-_~", min_size=1)
ROUND_TRIP_STR = [
    "file:///{path}",
    "file:///{+path}",
    "db://{table}/{id}",
    "{a}/{+b}",
    "{x,y}",
    "{+x,y}",
    "page{#x,y}",
    "X{.a,b}",
    "{/a,b}/here",
    "{;a,b}",
    "{?a,b,c}",
    "?fixed=1{&a,b}",
    "repo://{a}/{b}/issues{?c}",
]
ROUND_TRIP_LIST = ["{/list*}", "X{.list*}", "{list*}", "{+list*}", "{#list*}", "{;list*}", "{?list*}", "{&list*}"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ROUND_TRIP_STR), st.data())
def test_round_trip_strings(template: str, data: st.DataObject) -> None:
    t = UriTemplate(template)
    values = {name: data.draw(SAFE, label=name) for name in t.variables}
    assert t.match(t.expand(values)) == values


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ROUND_TRIP_LIST), st.lists(SAFE, min_size=1))
def test_round_trip_lists(template: str, items: list[str]) -> None:
    t = UriTemplate(template)
    assert t.match(t.expand({"list": items})) == {"list": items}


@settings(max_examples=60, deadline=None)
@given(WORDS, WORDS, st.lists(WORDS, min_size=1))
def test_round_trip_ambiguous_neighbours(name: str, ext: str, dirs: list[str]) -> None:
    # Values without the separator round-trip even where templates are ambiguous.
    t = UriTemplate("file:///{+dir}/{name}.{ext}")
    values = {"dir": "/".join(dirs), "name": name, "ext": ext}
    assert t.match(t.expand(values)) == values


# --- cost ---------------------------------------------------------------------

ADVERSARIAL_TEMPLATES = [
    "file:///{path}",
    "file:///{+path}",
    "file:///{+path}/here",
    "{+a}/{+b}/x",
    "file:///{name}.{ext}",
    "{a}{b}",
    "up{+path}{var}/here",
    "{/list*}/end",
    "{x,y,z}",
    "{?x,y,z}",
    "{?list*}",
    "{;list*}",
    "X{.a,b,c}",
    "repo://{owner}/{repo}/issues{?state,labels}",
    "{a}-v{b}",
    "{a}{+b}x",
    "{+a}{+b}/x",
    "semver://{major}.{minor}.{patch}",
    "{#a}{#b}x",
    "{/a*}{/b*}x",
    "{a}{#b}{c}",
    "file:///{dir}{/name}.{ext}",
    "{+a}.{+b}-{c}",
    "{a*,b*}{c}",
    "{a}{?q}{b}",
]
ADVERSARIAL_UNITS = ["a", "/", ".", "#", "a.", "a/", "%20", ";list=", "&list=a"]


@pytest.mark.parametrize("template", ADVERSARIAL_TEMPLATES)
def test_adversarial_input_is_fast(template: str) -> None:
    t = UriTemplate(template)
    for unit in ADVERSARIAL_UNITS:
        for head, tail in [("file:///", "!"), ("?x=", "/x")]:
            uri = head + unit * (100_000 // len(unit)) + tail
            start = time.perf_counter()
            t.match(uri)
            assert time.perf_counter() - start < 0.5, (template, unit, head, tail)


# Templates where values can run into each other, so the matcher's shortcuts
# (possessive runs, `_narrow`) are doing real work.
AMBIGUOUS_TEMPLATES = [
    "{+path}/here",
    "{+a}/{+b}/x",
    "{name}.{ext}",
    "{a}-v{b}",
    "{a}{b}",
    "up{+path}{var}/here",
    "{/list*,path:4}",
    "{a}{+b}x",
    "{a}{+b}.{c}",
    "{a}{+b}{c}x",
    "{a}.{+b}{c}.{d}",
    "{+path}{?q}",
    "{;list*}{;list}",
    "{&a,list*}",
    "{a}.{b}.{c}",
    "{a}.{b}-{c}",
    "{#a}{#b}x",
    "{/a}.{b}.{c}",
    "{/a*}{/b*}x",
    "{a}{#b}{c}",
    "{dir}{/name}.{ext}",
    "{a}{/b}{.c}{d}",
    "{+a}.{+b}-{c}",
    "{a}-{b}.{c}-{d}",
    "{a*,b*}{c}",
    "{+a*}?q={+b}-{c}",
    "{a}{?q}{b}",
]


def test_shortcuts_do_not_change_results() -> None:
    """URIs built from separator-heavy symbols match exactly as a plain greedy regex would."""
    everything = frozenset(chr(c) for c in range(32, 127))
    with (
        mock.patch.object(uri_template, "_narrow", lambda *args: None),
        mock.patch.object(uri_template._Cap, "atom_firsts", lambda self: everything),
    ):
        naive = [UriTemplate(t) for t in AMBIGUOUS_TEMPLATES]
    assert any(n._regex.pattern != UriTemplate(n.template)._regex.pattern for n in naive)  # patch took
    symbols = ["a", "/", ".", "-", "v", "#", ";list", "=", "&", "?q="]
    rng = random.Random(6570)
    uris = ["".join(combo) for n in range(4) for combo in itertools.product(symbols, repeat=n)]
    uris += ["".join(rng.choices(symbols, k=rng.randint(4, 8))) for _ in range(2000)]
    for plain in naive:
        fast = UriTemplate(plain.template)
        for uri in uris:
            assert fast.match(uri) == plain.match(uri), (plain.template, uri)
