"""LEAP compatibility shim: ``from leap_filter_sequence import *`` as in upstream scripts."""
from leap.compat.filter_sequence import *  # noqa: F401,F403
from leap.compat.filter_sequence import __all__  # noqa: F401
