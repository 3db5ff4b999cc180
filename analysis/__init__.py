"""The analysis of what agents wrote, by meaning: embedders, the vector cache, arguments grouped across
wordings and languages, and hybrid search (docs/architecture.md#meaning). Everything here is derived
from the read models and disposable; nothing here writes events."""

from .embedders import Embedder, embedder_from
from .reader import Reader, Wordings, recorded_reader
from .vectors import VectorCache, embedder_named, vectors_path_for

__all__ = ["Embedder", "Reader", "VectorCache", "Wordings", "embedder_from", "embedder_named", "recorded_reader",
           "vectors_path_for"]
