"""The one writer (IR -> .armnn bytes) and reader (bytes -> IR)."""
from .reader import read  # noqa: F401
from .writer import write, FILE_IDENTIFIER  # noqa: F401
