"""The version of afkak (a leaf module, so that any layer may import it)."""

__version__ = "30.0.0.dev0"
