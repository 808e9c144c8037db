"""LEAP's ``leap_preprocessing_algorithms`` module name, so LEAP scripts keep working:
``from leap_preprocessing_algorithms import *`` gives :mod:`leap.compat.preprocessing`."""
from leap.compat.preprocessing import *  # noqa: F401,F403
from leap.compat.preprocessing import __all__  # noqa: F401
