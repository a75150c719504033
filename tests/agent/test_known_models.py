"""Model names the package knows, and the one warning for a name it does not."""

from __future__ import annotations

import warnings

import pytest

from agent._known_models import UnknownModelWarning, warn_if_unknown


def test_an_unknown_model_name_warns_once_and_a_known_one_never() -> None:
    with pytest.warns(UnknownModelWarning, match=r"'gemini-2\.5-flsh-once'.*check the spelling"):
        warn_if_unknown("gemini-2.5-flsh-once")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_unknown("gemini-2.5-flsh-once")  # already told
        warn_if_unknown("gemini-2.5-flash")


def test_a_retired_model_names_its_successor() -> None:
    with pytest.warns(UnknownModelWarning, match="shut down; use gemini-3.1-pro-preview"):
        warn_if_unknown("models/gemini-3-pro-preview")
