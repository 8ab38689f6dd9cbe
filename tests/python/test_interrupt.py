"""Ctrl-C during a long run, from a timer thread (_thread.interrupt_main, and a real SIGINT with os.kill): the
library is cancelled through am_context_cancel, KeyboardInterrupt is raised once it has returned, the partial
results on the exception are a valid document, no thread is left running and the interpreter goes on. ~3 s."""
import _thread
import logging
import os
import signal
import threading
import time

import pytest

import attnmech as am

# posterior sampling for minutes (tests/cli: "SIGTERM during posterior sampling"); stopped after it started
LONG = dict(widths=[10], P=40, P_test=100, feature_dim=20, seq_len=10, chains=2, warmup=1, samples=10_000_000,
            threads=1, progress=False)


class _FireWhenSampling(logging.Handler):
    """Sends the interrupt 0.5 s after the library logs that sampling started."""

    def __init__(self, fire):
        super().__init__()
        self.fire = fire
        self.timer = None

    def emit(self, record):
        if self.timer is None and "posterior: NUTS" in record.getMessage():
            self.timer = threading.Timer(0.5, self.fire)
            self.timer.start()


@pytest.mark.parametrize("how", ["interrupt_main", "sigint"])
def test_ctrl_c_cancels_run(how):
    fire = _thread.interrupt_main if how == "interrupt_main" else (lambda: os.kill(os.getpid(), signal.SIGINT))
    handler = _FireWhenSampling(fire)
    logger = logging.getLogger("attnmech")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    before = threading.active_count()
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt) as ei:
            am.run("markov", "posterior", **LONG)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
        if handler.timer:
            handler.timer.join()
    assert handler.timer is not None, "sampling never started"
    assert time.monotonic() - t0 < 60
    r = ei.value.results
    assert isinstance(r, am.Results)
    assert r.status == "cancelled" and r["runs"][0]["run_status"] == "cancelled"
    post = r["runs"][0]["posterior"]
    assert post["interrupted"] is True and 0 < post["draws"] < 2e7
    assert am._core.live_workers() == 0  # the worker thread has finished
    assert threading.active_count() == before
    # the interpreter (and the library) are usable afterwards
    again = am.run("markov", P=40, P_test=60, widths=[10], threads=1, progress=False)
    assert again.status == "ok"


def test_set_interruptible_runs_in_the_calling_thread():
    old = am.set_interruptible(False)
    try:
        assert am.set_interruptible(False) is False
        r = am.run("markov", P=40, P_test=60, widths=[10], threads=1, progress=False)
        assert r.status == "ok"
    finally:
        am.set_interruptible(old)
    assert am.set_interruptible(old) is old
