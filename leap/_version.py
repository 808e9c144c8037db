"""The package version: one place, read by setup.cfg and by leap and its facade."""
__version__ = "0.1.0"
