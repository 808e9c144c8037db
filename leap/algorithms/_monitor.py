"""Progress bar and per-iteration callback shared by all iterative methods."""
from __future__ import annotations

import math
import sys

# A bar appears only once a run has lasted this long (seconds): short runs, such as
# the tests', print nothing, long ones show their progress.
PROGRESS_DELAY_S = 1.0


class IterationMonitor:
    """Reports iterations to a tqdm bar and to ``callback(iteration, f, data_fit)``.

    ``iteration`` counts completed iterations (1 … num_iter), ``f`` is the current
    iterate (the array being updated in place: copy it to keep it; for torch or Numba
    CUDA inputs, a CuPy view of their memory) and ``data_fit`` the method's data-fit
    value at ``f`` (see each method). A callback returning ``True``
    stops the iterations; the current ``f`` is then the result.

    Use as a context manager; :meth:`step` returns ``True`` when the run must stop.
    """

    def __init__(self, name, num_iter, progress=True, callback=None):
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable (iteration, f, data_fit) -> bool, "
                            f"got {type(callback).__name__}")
        self.name = name
        self.num_iter = int(num_iter)
        self.callback = callback
        self.stopped_at = None
        self._bar = None
        if progress and self.num_iter > 0:
            from tqdm import tqdm
            self._bar = tqdm(total=self.num_iter, desc=name, unit="it", file=sys.stderr,
                             delay=PROGRESS_DELAY_S, leave=False, dynamic_ncols=True)

    @property
    def wants_data_fit(self) -> bool:
        """Whether a data-fit value is needed each iteration (methods that must do extra
        work to compute it skip that work otherwise)."""
        return self.callback is not None

    def step(self, iteration, f, data_fit=None) -> bool:
        """Record a completed iteration: advance the progress bar and call the callback.
        Returns True when the callback asks to stop."""
        if self._bar is not None:
            self._bar.update(1)
            if data_fit is not None and math.isfinite(data_fit):
                self._bar.set_postfix_str(f"data fit {data_fit:.4g}", refresh=False)
        if self.callback is not None and self.callback(iteration, f, data_fit):
            self.stopped_at = iteration
            return True
        return False

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
