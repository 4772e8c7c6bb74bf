"""The key–value rows and the ordered picker, as widgets and fields: what they post is what the JSON text
would have held, in order, and what they refuse they name."""

from __future__ import annotations

import pytest
from django import forms
from django.http import QueryDict

from portal.keyvalue_widget import KeyValueField, KeyValueRows, Rows, read_value, value_text
from portal.ordered_widget import OrderedNamesField


@pytest.mark.parametrize("value", [1, 0, 2.5, True, None, "1Gi", "1", "true", "", ["a", 1], "a b", '"quoted"'])
def test_a_value_shown_in_its_row_reads_back_the_same(value):
    assert read_value(value_text(value)) == value


def post(pairs: list[tuple[str, str]], name: str = "vars") -> QueryDict:
    data = QueryDict(mutable=True)
    for key, value in pairs:
        data.appendlist(f"{name}-key", key)
        data.appendlist(f"{name}-value", value)
    return data


def test_rows_become_the_mapping_blank_rows_skipped():
    field = KeyValueField()
    rows = field.widget.value_from_datadict(post([("A", "1"), ("", ""), ("B", "x y"), ("C", "[1, 2]")]), {}, "vars")
    assert field.clean(rows) == {"A": 1, "B": "x y", "C": [1, 2]}
    assert KeyValueField(widget=KeyValueRows(plain_values=True)).clean(Rows([("FAIL", "1")])) == {"FAIL": "1"}


def test_the_mapping_as_json_text_is_still_read():
    field = KeyValueField()
    data = QueryDict("vars=%7B%22A%22%3A+1%7D")
    assert field.clean(field.widget.value_from_datadict(data, {}, "vars")) == {"A": 1}
    with pytest.raises(forms.ValidationError, match="Enter the rows, or the mapping as JSON"):
        field.clean("{not json")


def test_a_value_without_a_key_and_a_repeated_key_are_named():
    field = KeyValueField()
    with pytest.raises(forms.ValidationError) as caught:
        field.clean(Rows([("A", "1"), ("", "lost"), (" A ", "2")]))
    assert caught.value.messages == [
        "Row 2: the value 'lost' has no name; give it one or clear the row.",
        "Key 'A' is given twice (rows 1 and 3).",
    ]


def test_rows_render_with_one_blank_row_and_the_invalid_ones_marked():
    widget = KeyValueRows(key_choices=("COMPLETE", "FAIL"))
    widget.invalid_keys = {"FAIL"}
    html = widget.render("actions", {"COMPLETE": "0", "FAIL": "1-3"})
    assert html.count("<tr data-kv-row") == 3 and html.count('class="kv-invalid"') == 1
    assert '<option value="FAIL" selected>FAIL</option>' in html


def test_ordered_names_keep_their_order_and_refuse_unknown_or_repeated_ones():
    field = OrderedNamesField(noun="pod template")
    field.choices = ["a", "b", "c"]
    data = QueryDict("t=c&t=a&t=")  # the add select posts blank
    assert field.clean(field.widget.value_from_datadict(data, {}, "t")) == ["c", "a"]
    with pytest.raises(forms.ValidationError) as caught:
        field.clean(["a", "zzz", "a"])
    assert caught.value.messages == ["Unknown pod template 'zzz'.", "'a' is chosen twice."]
    html = field.widget.render("t", ["b", "a"])
    assert html.index('value="b"') < html.index('value="a"') and '<option value="c">c</option>' in html
