"""Word lists and verb tables of the offline translator (data only)."""

from __future__ import annotations

# Verb forms -> predicate. Each base verb also matches its third-person and -ing
# forms (see ``verb_forms``); multi-word entries carry their particle.
VERBS: dict[str, str] = {
    "like": "likes", "love": "loves", "adore": "loves", "enjoy": "enjoys", "prefer": "prefers",
    "dislike": "dislikes", "hate": "dislikes", "detest": "dislikes", "loathe": "dislikes",
    "want": "wants", "need": "needs", "use": "uses", "own": "owns", "know": "knows",
    "speak": "speaks", "play": "plays", "eat": "eats", "drink": "drinks", "study": "studies",
    "teach": "teaches", "manage": "manages", "lead": "leads", "visit": "visits", "support": "supports",
    "avoid": "avoids", "trust": "trusts", "admire": "admires", "drive": "drives", "watch": "watches",
    "write": "writes", "build": "builds", "maintain": "maintains", "employ": "employs",
    "have": "has", "have got": "has",
    "live in": "lives_in", "live at": "lives_in", "move to": "lives_in",
    "work at": "works_at", "work for": "works_at", "work on": "works_on", "work as": "works_as",
    "work with": "works_with", "come from": "comes_from", "report to": "reports_to",
    "belong to": "belongs_to", "study at": "studies_at", "go to": "goes_to", "depend on": "depends_on",
    "care about": "cares_about", "believe in": "believes_in",
}

# Fixed multi-word verb phrases (no inflection): phrase -> (predicate, negated).
PHRASES: dict[str, tuple[str, bool]] = {
    "would like": ("wants", False), "would love": ("wants", False), "would rather": ("prefers", False),
    "would prefer": ("prefers", False), "can not stand": ("dislikes", False), "cannot stand": ("dislikes", False),
    "was born in": ("born_in", False), "were born in": ("born_in", False), "am born in": ("born_in", False),
}

# "<subject> is/am/are <adjective phrase> <object>" -> predicate.
COPULA_PHRASES: dict[str, str] = {
    "interested in": "interested_in", "allergic to": "allergic_to", "afraid of": "afraid_of",
    "good at": "good_at", "bad at": "bad_at", "married to": "married_to", "responsible for": "responsible_for",
    "from": "comes_from", "based in": "located_in", "located in": "located_in", "located at": "located_in",
    "fond of": "likes", "a fan of": "likes", "a big fan of": "likes", "a huge fan of": "likes",
    "part of": "part_of", "working at": "works_at", "working for": "works_at", "working on": "works_on",
    "living in": "lives_in", "using": "uses", "learning": "studies", "studying": "studies",
}

# Words dropped before parsing: discourse markers at the start of a clause.
LEADING_MARKERS = (
    "actually", "well", "also", "now", "so", "oh", "ok", "okay", "hmm", "honestly", "in fact",
    "to be honest", "by the way", "however", "though", "correction", "no", "yes", "but", "and",
    "then", "plus", "instead", "anyway", "these days", "nowadays", "i mean", "wait",
)
# Hedges lower the confidence of what follows.
HEDGES = ("i think that", "i think", "i believe that", "i believe", "i guess", "maybe", "probably", "perhaps")
HEDGED_CONFIDENCE = 0.6
DEFAULT_CONFIDENCE = 0.9

# Adverbs removed anywhere in a clause; trailing intensifiers removed at the end.
FILLER_ADVERBS = frozenset({
    "really", "also", "still", "usually", "always", "generally", "mostly", "definitely", "absolutely",
    "totally", "truly", "just", "strongly", "personally", "honestly", "actually", "currently", "typically",
})
TRAILING_FILLERS = ("very much", "so much", "a lot", "too", "as well", "anymore", "any more", "any longer", "nowadays")

FIRST_PERSON = frozenset({"i", "me", "we", "us", "myself"})
UNRESOLVED_PRONOUNS = frozenset({
    "he", "she", "they", "it", "this", "that", "these", "those", "you", "him", "her", "them", "there",
})
QUESTION_WORDS = frozenset({
    "what", "who", "whom", "whose", "where", "when", "which", "why", "how",
    "do", "does", "did", "is", "are", "am", "can", "could", "would", "should", "will", "was", "were",
})
ARTICLES = ("the", "a", "an", "some", "any")

TIME_WORDS = frozenset({
    "morning", "afternoon", "evening", "night", "noon", "midnight", "dawn", "dusk", "weekend", "weekday",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "today", "tomorrow", "yesterday", "spring", "summer", "autumn", "fall", "winter",
    "lunchtime", "daytime", "nighttime", "week", "month", "year", "hour",
})
ACTIVITY_WORDS = frozenset({
    "meeting", "call", "walk", "run", "hike", "swim", "yoga", "lunch", "dinner", "breakfast", "workout",
    "class", "lesson", "game", "sport", "trip", "travel", "exercise", "standup", "review", "interview",
    "party", "chess", "football", "tennis", "music", "dance", "work",
})
PLACE_WORDS = frozenset({
    "home", "office", "city", "country", "town", "village", "park", "beach", "gym", "school",
    "university", "restaurant", "cafe", "airport", "street", "room", "building",
})
NOT_ACTIVITY_ING = frozenset({
    "thing", "morning", "evening", "ceiling", "building", "string", "king", "ring", "wing", "spring", "nothing",
    "something", "everything", "anything",
})
# Plurals the naive singulariser gets wrong.
SINGULAR_EXCEPTIONS = {
    "news": "news", "series": "series", "species": "species", "people": "person", "children": "child", "men": "man",
    "women": "woman", "mice": "mouse", "feet": "foot", "teeth": "tooth",
}

PLACE_PREDICATES = frozenset({"lives_in", "located_in", "comes_from", "born_in", "goes_to"})
VALUE_PREDICATES = frozenset({"has_property", "has_name", "has_age"})
PERSON_OBJECT_PREDICATES = frozenset({"knows", "married_to", "reports_to", "manages", "employs", "trusts", "admires"})
