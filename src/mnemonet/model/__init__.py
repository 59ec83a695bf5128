"""Plain data types shared by every layer; no I/O here."""

from mnemonet.model.api import Answer, ClaimResult, InferredClaim, MemoryAPI, ObserveResult, Recall
from mnemonet.model.ids import derived_id, new_id
from mnemonet.model.records import (
    ClaimRecord,
    ConceptComponent,
    ConceptSpec,
    ObservationRecord,
    SourceSpec,
    StatementLink,
    StatementSpec,
    normalise_name,
)
from mnemonet.model.views import (
    AuditView,
    ConceptRelationView,
    ConceptView,
    ContradictionView,
    ObservationView,
    RetractionView,
    SearchHit,
    StatementView,
    TombstoneView,
    WriteResult,
)

__all__ = [
    "Answer", "AuditView", "ClaimRecord", "ClaimResult", "ConceptComponent", "ConceptRelationView", "ConceptSpec",
    "ConceptView", "ContradictionView", "InferredClaim", "MemoryAPI", "ObservationRecord",
    "ObservationView", "ObserveResult", "Recall", "RetractionView", "SearchHit", "SourceSpec", "StatementLink",
    "StatementSpec", "StatementView", "TombstoneView", "WriteResult", "derived_id", "new_id", "normalise_name",
]
