"""File input/output: LEAP parameter files, data arrays, lazy sources and scanner
formats (:func:`open_scan`)."""
from .param_writer import write_param_file
from .params import LeapParamWarning, read_param_dict, read_param_file
from .scanners import Scan, open_scan

__all__ = ["read_param_file", "read_param_dict", "write_param_file", "LeapParamWarning",
           "open_scan", "Scan"]
