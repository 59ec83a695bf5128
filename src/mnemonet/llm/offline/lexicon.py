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
    "care about": "cares_about", "believe in": "believes_in", "bear in": "born_in", "move from": "lives_in",
    "base in": "located_in", "base at": "located_in",
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
DEFAULT_CONFIDENCE = 0.9  # no hedge (mnemonet.llm.hedges.NO_HEDGE); the canonical claim form reads it
# Leading hedges the rule layer strips (their confidence comes from ``mnemonet.llm.hedges``).
HEDGES = ("i think that", "i think", "i believe that", "i believe", "i guess", "maybe", "probably", "perhaps")

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

# -- the dependency mapper (``mapping``) ---------------------------------------

# "<possessor>'s <noun> is <value>" -> (possessor, has_<noun>, value) for these nouns (and any "favourite X").
ATTRIBUTE_NOUNS = frozenset({
    "name", "age", "email", "birthday", "phone", "number", "address", "job", "role", "title", "hometown",
    "language", "timezone", "team", "manager", "boss", "goal", "nickname", "dream", "colour", "color",
    "wife", "husband", "partner", "brother", "sister", "mother", "father", "mom", "dad", "son", "daughter",
    "girlfriend", "boyfriend", "friend", "dog", "cat", "pet", "car", "major", "profession", "occupation",
})
FAVOURITE_WORDS = frozenset({"favourite", "favorite", "top"})
# be + preposition -> predicate ("I'm from Canada", "the office is in Berlin").
COPULA_PREPOSITIONS: dict[str, str] = {"from": "comes_from", "in": "located_in", "at": "located_in", "on": "is_on"}
# modal/adverb + verb phrases -> (predicate, negated by the phrase): "can't stand X" dislikes X.
VERB_PHRASES: dict[str, tuple[str, bool]] = {
    "would like": ("wants", False), "would love": ("wants", False), "would rather": ("prefers", False),
    "would prefer": ("prefers", False), "would rather have": ("prefers", False), "can stand": ("dislikes", True),
}
FAN_NOUNS = frozenset({"fan", "lover", "admirer"})
BETTER_WORDS = frozenset({"better", "best", "preferable", "ideal", "nicer", "easier", "worse", "worst"})
WORSE_WORDS = frozenset({"worse", "worst"})
# Verbs whose only complement may be a time phrase: "the key rotation happens every 90 days".
EVENT_VERBS = frozenset({"happen", "occur", "run", "repeat", "recur", "expire", "renew", "rotate", "start", "end"})
VERBS_WITHOUT_OBJECT = frozenset({"work", "live", "study", "travel"})
MANNER_OBJECTS = frozenset({"remotely", "abroad", "overseas", "online", "part-time", "freelance", "downtown"})
REPORTING_VERBS = frozenset({"say", "tell", "think", "believe", "guess", "feel", "hope", "know", "mean", "suppose",
                             "reckon", "doubt", "mention", "hear", "realize", "realise", "bet", "claim", "add",
                             "explain",
                             "wish", "imagine", "figure", "notice", "see", "find", "read"})
# A reported clause is as sure as the report: "I think X" 0.7, "I doubt X" 0.3 (the hedge table's numbers).
REPORTING_HEDGES: dict[str, float] = {"think": 0.7, "believe": 0.7, "guess": 0.7, "suppose": 0.7, "reckon": 0.7,
                                      "doubt": 0.3, "hope": 0.5, "wish": 0.3, "imagine": 0.5, "bet": 0.7}
CONDITIONAL_MARKS = frozenset({"if", "unless", "whether", "once"})
# Verbs passing their subject to an infinitive plan: "I plan to move", "we intend to hire".
PLAN_VERBS = frozenset({"plan", "intend", "mean", "aim", "expect", "hope"})
ASPECT_VERBS = frozenset({"start", "begin", "keep", "continue", "resume", "try", "get"})
STATIVE_VERBS = frozenset({"want", "love", "like", "know", "have", "get", "be", "live", "work", "own", "hate"})
TIMELESS_PREDICATES = frozenset({"born_in", "comes_from", "has_birthday"})
# Past facts and plans weigh less than present facts (MemoryService ranks by confidence).
PAST_CONFIDENCE_FACTOR = 0.9
PLAN_CONFIDENCE_FACTOR = 0.7
TIME_ADVERBS = frozenset({"yesterday", "today", "tomorrow", "tonight", "now", "recently", "lately", "soon", "ago",
                          "before", "already", "someday", "sometime", "then", "later", "earlier", "nowadays", "anymore",
                          "once", "again", "currently", "always", "often", "daily", "weekly"})
LEADING_WORDS = frozenset({"so", "oh", "well", "yeah", "yes", "no", "and", "but", "hey", "okay", "ok", "actually",
                           "also",
                           "plus", "wow", "hmm"})
COMMON_CAPITALISED = TIME_WORDS | ACTIVITY_WORDS | PLACE_WORDS
# Attribute nouns naming a person or animal: an attribute only when the value is a name.
RELATION_NOUNS = frozenset({
    "wife", "husband", "partner", "brother", "sister", "mother", "father", "mom", "dad", "son", "daughter",
    "girlfriend", "boyfriend", "friend", "dog", "cat", "pet", "manager", "boss",
})
# Prepositions of the phrases of time and place that stay with an object, whether they hang off it or
# off its clause: "I hate meetings on Fridays" -> (speaker, dislikes, meetings on Fridays), a narrower
# fact than "meetings"; an activity keeps its purpose too ("waking up early for meetings").
QUALIFIER_PREPOSITIONS = frozenset({"on", "in", "at", "during", "before", "after", "until", "near", "around"})
# A noun's own complement, part of what it names: "capital of France", "subscriptions to Netflix and Spotify".
COMPLEMENT_PREPOSITIONS = frozenset({"of", "to"})
ACTIVITY_QUALIFIERS = QUALIFIER_PREPOSITIONS | {"for", "without"}
# Nouns for people (kin and company): a move puts them in a home, not a place of business.
PERSON_NOUNS = RELATION_NOUNS - {"dog", "cat", "pet"} | {
    "parent", "family", "kid", "child", "colleague", "coworker", "roommate", "flatmate", "neighbour", "neighbor",
    "cousin", "aunt", "uncle", "grandparent", "grandma", "grandpa", "grandmother", "grandfather", "nephew",
    "niece", "people", "folk", "person", "man", "woman", "guy", "girl", "boy",
}
PARTICLES = frozenset({"back", "up", "out", "down", "off", "away", "over", "forward"})
QUANTITY_NOUNS = frozenset({"lot", "lots", "bunch", "couple", "ton", "tons", "plenty", "number", "few"})
REPORTING_FORMS = frozenset({"said", "says", "say", "told", "tells", "thinks", "thought", "believes", "believed",
                             "mentioned", "mentions", "claims", "claimed", "reckons", "guesses", "guessed"})
CONJUNCTIONS = frozenset({"and", "but", "or", "nor", "although", "though", "while", "whereas", "because", "so", "yet"})

# -- changes of an attribute said as an event (``changes``) ------------------------
# "Tom joined Hooli" / "Tom left Initech": with a named organisation as the object, the job itself
# (works_at, ended by leave/quit) -- the state that holds now, so the old employer is superseded.
JOIN_VERBS = frozenset({"join"})
# Verbs whose done event leaves the subject having their object ("we adopted a dog": has dog).
ACQUIRE_VERBS = frozenset({"adopt", "buy", "purchase", "acquire", "inherit", "rescue"})
LEAVE_VERBS = frozenset({"leave", "quit"})
# Entity labels that are not an employer; the small model's ORG/PERSON labels on made-up company
# names are unreliable (it tags "Hooli" PERSON), so any other proper noun counts as one.
NOT_EMPLOYER_LABELS = frozenset({"GPE", "LOC", "FAC", "DATE", "TIME", "MONEY", "QUANTITY", "CARDINAL", "ORDINAL"})
# "started a new job at Hooli", "took a position with Acme", "lost my job at X": nouns of a job, the
# verbs that take one up or end it, and the prepositions that name the employer.
JOB_NOUNS = frozenset({"job", "position", "role", "post", "gig", "internship", "contract", "placement"})
ROLE_STARTING_VERBS = frozenset({"start", "begin"})  # "started as a flight attendant": the role held now
JOB_TAKING_VERBS = frozenset({"start", "take", "get", "land", "accept", "begin", "have", "find", "secure", "score"})
JOB_ENDING_VERBS = frozenset({"lose", "quit", "leave"})
EMPLOYER_PREPOSITIONS = frozenset({"at", "with", "from", "for"})
# "I'm a student at MIT", "a regular at Joe's": roles at a place that are no job there.
NOT_JOB_ROLES = frozenset({"student", "pupil", "member", "guest", "patient", "customer", "client", "visitor",
                           "regular", "fan", "volunteer", "resident", "tourist"})
# "got hired by Cyberdyne", "is employed by Wayne Enterprises": the agent is the employer.
HIRE_VERBS = frozenset({"hire", "employ", "recruit", "poach"})
# "We renamed the Monday meeting to Kickoff" -> (Monday meeting, has_name, Kickoff).
RENAME_VERBS = frozenset({"rename"})
# Verbs of rescheduling: "The retro moved to Thursday", "we postponed the launch until April" (a thing
# moved to a day or time) -> (retro, happens_on, Thursday); "The launch is on Monday" -> happens_on Monday.
RESCHEDULE_VERBS = frozenset({"move", "reschedule", "postpone", "push", "shift", "bring", "change", "delay",
                              "bump", "extend", "defer"})
RESCHEDULE_PREPOSITIONS = frozenset({"to", "for", "until", "till"})
TIME_PREPOSITIONS = frozenset({"on", "at", "in"})
# The prepositions whose object a passive participle binds to ("subscribed to Spotify", "booked for 10
# March", "registered with a GP"), unlike those qualifying it ("injured in March", "hired by Acme").
PASSIVE_OBJECT_PREPOSITIONS = frozenset({"to", "for", "with", "on", "onto", "into"})
WHEN_PREDICATE = "happens_on"
WEEKDAYS = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"})
MONTHS = frozenset({"january", "february", "march", "april", "may", "june", "july", "august", "september",
                    "october", "november", "december"})
# Verbs of scalar change and of promotion: "<X> <verb> (from A) to B" says X is B now ("the budget was
# cut to 20k", "Sam was promoted to senior engineer"); so does any verb with one of the particles
# ("went up to 1500", "came down to 3", "stepped up to editor").
SCALAR_VERBS = frozenset({
    "cut", "raise", "lower", "increase", "decrease", "reduce", "drop", "fall", "rise", "climb", "grow", "shrink",
    "jump", "double", "slash", "hike", "boost", "promote", "demote", "upgrade", "downgrade", "change",
})
CHANGE_PARTICLES = frozenset({"up", "down", "forward"})
PROMOTION_PHRASES = frozenset({"move up", "step up", "bump up"})  # "moved up to senior analyst"
AMOUNT_MOTION_VERBS = frozenset({"go", "come"})  # "went up to 1500", "came down to 3"
# Verbs of moving house or workplace: "<X> moved / relocated / got transferred to P" says X is in P now.
MOVE_VERBS = frozenset({"move", "relocate", "transfer", "settle", "emigrate", "retire"})
MOVE_PREPOSITIONS = frozenset({"to", "into", "in"})
# A person moved to one of these is placed there at work (located_in), not at home.
# Words that make a name an organisation's, whatever the entity label ("Acme Corp", "Initech GmbH").
ORGANISATION_DESIGNATORS = frozenset({"inc", "ltd", "llc", "llp", "plc", "gmbh", "ag", "corp", "corporation",
                                      "company", "co", "labs", "technologies", "consulting", "bank"})
WORKPLACE_NOUNS = frozenset({"office", "branch", "site", "campus", "headquarters", "hq", "department", "lab",
                             "plant", "studio", "team"})
# Verbs of switching what one uses: "switched (from A) to B"; and of replacing: "replaced A with B",
# "swapped A for B", "ditched A for B" (giving one thing up for another); "Y replaced / succeeded / took over
# from Z as my manager": Y holds the role.
SWITCH_VERBS = frozenset({"switch", "migrate", "convert", "transition"})
REPLACE_VERBS = frozenset({"replace", "swap", "trade", "exchange", "succeed", "take over", "relieve", "ditch", "drop",
                           "dump", "abandon"})
# Verbs ending an activity: "stopped going to the gym", "quit smoking", "gave up playing chess".
ENDING_VERBS = frozenset({"stop", "quit", "cease", "give up"})
# Statuses of things (``has_status``): the adjectives and participles that name one, and the verbs
# that set one ("the cafe closed down", "the project was cancelled", "my visa expired").
STATUS_WORDS: dict[str, str] = {
    "open": "open", "reopened": "open", "closed": "closed", "shut": "closed", "cancelled": "cancelled",
    "canceled": "cancelled", "active": "active", "inactive": "inactive", "running": "running", "paused": "paused",
    "suspended": "suspended", "over": "ended", "ended": "ended", "finished": "ended", "expired": "expired",
    "valid": "valid", "invalid": "invalid", "live": "live", "online": "online", "offline": "offline",
    "discontinued": "discontinued", "broken": "broken", "sold": "sold",
}
STATUS_VERBS: dict[str, str] = {
    "close": "closed", "close down": "closed", "shut": "closed", "shut down": "closed", "fold": "closed",
    "open": "open", "reopen": "open", "open up": "open", "cancel": "cancelled", "call off": "cancelled",
    "scrap": "cancelled", "end": "ended", "finish": "ended", "wrap up": "ended", "conclude": "ended",
    "expire": "expired", "suspend": "suspended", "pause": "paused", "resume": "running", "run": "running",
    "launch": "live", "discontinue": "discontinued", "break": "broken", "break down": "broken", "sell": "sold",
}
# The status verbs that set the status of their object ("they cancelled the project").
STATUS_TRANSITIVE = frozenset({"close", "shut", "cancel", "call", "scrap", "suspend", "reopen", "end", "discontinue",
                               "break", "sell"})
STATUS_PREDICATE = "has_status"
# An amount is the value of the thing it measures: "the budget is 50k" -> (budget, has_value, 50k).
VALUE_PREDICATE = "has_value"
MAX_AGE = 130  # a bare number said of a person ("Ben is 41") is their age up to this
# An activity said without an object is a habit: "I quit smoking" -> (speaker, has_habit, smoking, negated).
HABIT_PREDICATE = "has_habit"
# Verbs that, said of a person with nothing after them, name no activity one has ("I agree", "I see",
# "I know", "I'll try", "it depends"): never read as a habit.
NOT_HABITS = REPORTING_VERBS | PLAN_VERBS | STATIVE_VERBS | VERBS_WITHOUT_OBJECT | ENDING_VERBS | frozenset({
    "agree", "disagree", "understand", "care", "remember", "forget", "wonder", "mind", "wait", "try", "come",
    "go", "leave", "stay", "happen", "matter", "exist", "seem", "win", "lose", "promise", "apologise",
    "apologize", "do", "count", "depend", "help", "suck", "rock", "lie", "sit", "stand", "arrive", "return",
    "die", "continue", "start", "stop", "begin", "end", "change", "look", "sound", "feel", "let", "say",
    "ask", "answer", "reply", "listen", "talk", "speak", "laugh", "cry", "smile", "recall", "relax",
    "rest", "sleep", "wake", "need", "love", "like", "hate", "prefer", "enjoy", "deserve", "belong", "fit",
    "apply", "work", "play", "check", "follow", "join", "move", "pass", "sign", "vote",
})
# Verbs of becoming: a copula whose value is new ("became a lecturer", "turned 34"); verbs that give a
# title ("they made Omar head of sales", "Nora was appointed partner").
BECOME_VERBS = frozenset({"become", "turn"})
APPOINT_VERBS = frozenset({"make", "name", "appoint", "elect"})
# Modifiers of an attribute noun that say its value changed ("my new manager is Frank": has_manager,
# a change) or is a former one ("my previous manager was Carol": has_manager, past).
CHANGE_MODIFIERS = frozenset({"new", "current", "latest", "present"})
FORMER_MODIFIERS = frozenset({"old", "former", "previous", "ex"})

# -- revision cues (the cue words themselves: ``truth.cues``) -----------------------
# Lemmas by which a sentence corrects itself whatever their form ("let me correct that", "I misspoke",
# "typo earlier"); "correct" counts as a verb only ("that's correct" confirms).
CORRECTION_LEMMAS = frozenset({"correct", "correction", "misspeak", "misspoke", "typo", "mistake", "misremember"})
MISTAKEN_WORDS = frozenset({"wrong", "mistaken", "incorrect"})
# Cues that open a text before its first clause ("Correction: ...", "Sorry, ..."): stripped before
# parsing, since the small parser takes "correction" for the subject of what follows.
LEADING_CUES = ("correction", "sorry", "oops", "my mistake", "my bad", "actually", "no", "wait", "to correct that",
                "hold on", "scratch that", "let me correct that", "let me correct myself", "i misspoke", "typo")
