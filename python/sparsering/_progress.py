"""Progress reports for long k-NN runs: a tqdm bar when tqdm is installed, else a line on stderr."""
import contextlib
import sys
import time


class _LineReport:
    """A one-line report on stderr, redrawn at most a few times a second."""

    def __init__(self, total):
        self.total, self.start, self.last = total, time.perf_counter(), 0.0

    def update(self, done):
        now = time.perf_counter()
        if now - self.last < 0.25 and done < self.total:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        sys.stderr.write(f"\rk-NN: {done}/{self.total} queries ({100.0 * done / max(self.total, 1):.0f}%, "
                         f"{rate:,.0f}/s)")
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")


class _TqdmReport:
    def __init__(self, total):
        from tqdm import tqdm
        self.bar, self.done = tqdm(total=total, unit="query", desc="k-NN"), 0

    def update(self, done):
        self.bar.update(done - self.done)
        self.done = done

    def close(self):
        self.bar.close()


def _bar(total):
    try:
        return _TqdmReport(total)
    except ImportError:
        return _LineReport(total)


@contextlib.contextmanager
def progress_callback(progress, total):
    """What the binding calls between batches: None (Ctrl-C still stops the run), the user's
    callable(done, total), or a bar for progress=True."""
    if progress is None or progress is False:
        yield None
    elif progress is True:
        bar = _bar(total)
        try:
            yield lambda done, _total: bar.update(done)
        finally:
            bar.close()
    elif callable(progress):
        yield progress
    else:
        raise TypeError("progress must be None, True or a callable(done, total)")
