"""The lab's version (pyproject.toml and meson.build say the same)."""

__version__ = "0.1.0"
