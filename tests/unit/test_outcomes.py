"""The Outcome enum and prompts/outcomes.yaml name the same outcomes, and every row has its texts."""

from __future__ import annotations

import yaml

from bot.jobs import Outcome
from bot.pipeline.attempts.exits import EXITS
from bot.render import PROMPTS_DIR

TABLE = yaml.safe_load((PROMPTS_DIR / "outcomes.yaml").read_text())
FIELDS = {"icon", "headline", "reaction", "what", "retry"}


def test_every_outcome_has_a_row_and_every_row_an_outcome():
    assert set(TABLE) == {o.value for o in Outcome}


def test_every_row_has_every_field():
    assert {key: FIELDS - set(row) for key, row in TABLE.items() if FIELDS - set(row)} == {}


def test_every_exit_status_row_names_an_outcome_and_a_hint():
    assert all(isinstance(e.outcome, Outcome) and e.hint for e in EXITS.values())
