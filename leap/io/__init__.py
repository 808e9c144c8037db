"""File input/output for LEAP-compatible data (parameter files)."""
from .param_writer import write_param_file
from .params import LeapParamWarning, read_param_dict, read_param_file

__all__ = ["read_param_file", "read_param_dict", "write_param_file", "LeapParamWarning"]
