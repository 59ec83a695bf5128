"""What ``brief`` returns: what a new agent session should know, as text and as the same lines with their ids."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class BriefFact(BaseModel):
    """A current fact: one line of the brief, citing every statement that says it."""

    line: str = Field(description="The line as the text shows it.")
    sentence: str
    subject: str
    source: str | None = None
    ids: list[str] = Field(description="The statements saying it (the same claim from several observations).")
    new: bool = Field(False, description="Said at or after ``since``.")


class BriefConflict(BaseModel):
    """An open conflict between sources, stated as unresolved."""

    line: str
    ids: list[str] = Field(description="Its two sides, older first.")
    reason: str = ""


class BriefChange(BaseModel):
    """What changed since ``since``: a statement replaced (``superseded``) or taken back (``retracted``)."""

    line: str
    kind: Literal["superseded", "retracted"]
    ids: list[str] = Field(description="The earlier statement and what replaced it; or the retraction's target and "
                           "the retraction.")
    at: int = Field(0, description="When it changed (Unix ms).")


class BriefConcept(BaseModel):
    """A much-used concept: how many statements are about it, how many searches returned it."""

    line: str
    id: str
    name: str
    statements: int = 0
    searches: int = 0
    last_at: int = Field(0, description="When a statement about it was last written (Unix ms).")


class SessionBrief(BaseModel):
    """The brief: ``text`` within ``budget`` tokens, and the lines it holds as structure (nothing else).

    ``tokens`` is the text's estimate (``truth.brief.estimate_tokens``: characters / 4, rounded up);
    ``omitted`` counts the lines left out to stay within the budget.
    """

    subject: str | None = None
    subjects: list[str] = Field(default_factory=list, description="What the facts were gathered about.")
    since: int | None = None
    as_of: int = 0
    text: str
    facts: list[BriefFact] = Field(default_factory=list)
    conflicts: list[BriefConflict] = Field(default_factory=list)
    changes: list[BriefChange] = Field(default_factory=list)
    concepts: list[BriefConcept] = Field(default_factory=list)
    budget: int
    tokens: int
    omitted: int = 0

    @property
    def cited(self) -> list[str]:
        """Every id the brief cites, once, in the order of its lines."""
        ids = [i for part in (self.facts, self.conflicts, self.changes) for line in part for i in line.ids]
        return list(dict.fromkeys([*ids, *(c.id for c in self.concepts)]))
