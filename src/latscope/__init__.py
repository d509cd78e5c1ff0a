"""latscope: measure what operating-system primitives cost, and tell the truth about the numbers."""

__version__ = "0.1.0"
