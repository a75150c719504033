"""Redaction of ``${ENV}`` values: whole tokens only, and a warning for short values (17.10)."""

from __future__ import annotations

import pytest

from toolnexus._secrets import expand_env, redact


@pytest.mark.parametrize(
    ("text", "secrets", "expected"),
    [
        ("hello 1 2 10", ["1"], "hello [redacted] 2 10"),
        ("turn it on, only online", ["on"], "turn it [redacted], only online"),
        ("e = mc2, every e", ["e"], "[redacted] = mc2, every [redacted]"),
        ('{"auth": "Bearer s3cr3t-value"}', ["s3cr3t-value"], '{"auth": "Bearer [redacted]"}'),
        ("token=s3cr3t-value&x=1", ["s3cr3t-value"], "token=[redacted]&x=1"),
        ("Bearer%20s3cr3t-value", ["s3cr3t-value"], "Bearer%20[redacted]"),
        ("xs3cr3t-value s3cr3t-valuex", ["s3cr3t-value"], "xs3cr3t-value s3cr3t-valuex"),
        ("a-b: -key- and x-key-y", ["-key-"], "a-b: [redacted] and x[redacted]y"),
        ("long longer", ["long", "longer"], "[redacted] [redacted]"),
        ("nothing", ["", "zz"], "nothing"),
        ("v a.b.c ab", ["a.b"], "v [redacted].c ab"),
    ],
)
def test_a_secret_is_redacted_where_it_stands_as_a_whole_token(
    text: str, secrets: list[str], expected: str
) -> None:
    assert redact(text, secrets) == expected


def test_a_short_value_warns_once_naming_the_variable_not_the_value() -> None:
    env = {"TN_SHORT_FLAG": "on", "TN_LONG_TOKEN": "long-enough-value"}
    with pytest.warns(UserWarning) as caught:
        assert expand_env("${TN_SHORT_FLAG}", env) == ("on", ["on"])
        expand_env("${TN_SHORT_FLAG} ${TN_LONG_TOKEN}", env)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "TN_SHORT_FLAG holds a value of only 2 character(s)" in message
    assert "'on'" not in message
