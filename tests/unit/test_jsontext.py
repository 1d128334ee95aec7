"""jsontext.loads: msgspec's fast path accepts and refuses exactly what the careful decoder does."""
from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ragretrieval.files import jsontext
from pytest_ragretrieval.files.jsontext import MAX_DEPTH, JSONProblem, control_character, loads, plain_strings


def careful(text: str | bytes, allow_nan: bool = False) -> object:
    return jsontext._careful(text, allow_nan)


def outcome(decode: object, text: str | bytes) -> tuple[str, object]:
    try:
        value = decode(text)  # type: ignore[operator]
    except JSONProblem as exc:
        return "refused", str(exc)
    return "value", json.dumps(value, sort_keys=True)  # floats, ints and strings by their JSON spelling


EDGES = [
    "1e400", "-1e400", "NaN", "Infinity", "-Infinity", "[1,2", '"\\ud800"', '"\\udc00\\ud800"', '"\\u0000"',
    "9" * 20, "-" + "9" * 309, "9" * 310, "9" * 4300, "9" * 4301, '{"a":1,"a":2}', "[" * MAX_DEPTH + "]" * MAX_DEPTH,
    "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "[" * 5000 + "]" * 5000, '{"a":' * 101 + "1" + "}" * 101,
    "1.7976931348623157e308", "2.2250738585072014e-308", "1e-400", "-0", "-0.0", "1E5", "[1,]", '{"a":1,}',
    '"a\tb"', " 1 ", "1 2", '"\\x"', "\ufeff1", '"\\ud83d\\ude00"', "[" + ",".join(["[]"] * 120) + "]", "",
]


@pytest.mark.parametrize("text", EDGES, ids=range(len(EDGES)))
def test_edges_agree_with_the_careful_decoder(text: str) -> None:
    assert outcome(loads, text) == outcome(careful, text)
    assert outcome(loads, text.encode("utf-8")) == outcome(careful, text.encode("utf-8"))


def test_the_limits_the_docs_promise() -> None:
    assert loads("9" * 4300) == int("9" * 4300)
    assert loads("9" * 20) == 99999999999999999999 and isinstance(loads("9" * 20), int)
    with pytest.raises(JSONProblem, match=f"more than {jsontext.MAX_DIGITS} digits"):
        loads("9" * 4301)
    with pytest.raises(JSONProblem, match="NaN is not a JSON number"):
        loads('{"a": NaN}')
    assert loads('{"a": NaN}', allow_nan=True)["a"] != loads('{"a": NaN}', allow_nan=True)["a"]
    with pytest.raises(JSONProblem, match="too large for a float"):
        loads("[1e400]")
    with pytest.raises(JSONProblem, match=f"nested deeper than {MAX_DEPTH} levels"):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert loads('"\\ud800"') == "\ud800"  # decoded; readers refuse it with jsontext.unstorable
    assert loads('"\\u0000"') == "\x00"
    with pytest.raises(JSONProblem, match="not UTF-8"):
        loads(b'"\xff"')
    assert loads(b'{"a": [1, 2.5, "\xe4\xb8\xad"]}') == {"a": [1, 2.5, "中"]}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans())
def test_any_json_value_decodes_as_the_careful_decoder_does(value: object, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert outcome(loads, text) == outcome(careful, text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="[]{}\":,0123456789.eE+-nulltrfasNIy \\u", max_size=40))
def test_any_text_is_accepted_or_refused_as_the_careful_decoder_does(text: str) -> None:
    assert outcome(loads, text) == outcome(careful, text)


def test_control_characters_are_unicodes_categories() -> None:
    every = "".join(chr(c) for c in range(0x10000))  # the three categories have no member past the BMP
    wanted = [char for char in every if unicodedata.category(char) in ("Cc", "Zl", "Zp")]
    found = [char for char in every if control_character(char) is not None]
    assert found == wanted
    assert control_character("ab\u2028c\n") == "U+2028"


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans())
def test_plain_strings_means_no_string_needs_a_look(value: object, ascii_only: bool) -> None:
    from pytest_ragretrieval.record.checks import text_problem

    text = json.dumps({"root": value}, ensure_ascii=ascii_only)
    if plain_strings(text):
        assert text_problem(loads(text)) is None


@pytest.mark.parametrize("text", ['{"a": "\\u0000"}', '{"a": "\\ud800"}', '{"a": "x\\ny"}', '{"a\\t": 1}',
                                  '{"a": "\u2028"}', '{"a": "\x85"}', '{"a": "\\\\n"}'])
def test_plain_strings_refuses_what_may_hide_a_control_character(text: str) -> None:
    assert not plain_strings(text)
    assert plain_strings('{"a": "say \\"hi\\" / \\/ 中文"}')


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=5), json_values, max_size=5))
def test_results_files_are_pythons_indented_json(doc: dict[str, object]) -> None:
    from pytest_ragretrieval.baseline.format import dumps

    assert dumps(doc) == json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=2) + "\n"
