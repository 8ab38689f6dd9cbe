"""Objects shared between threads (docs/python.md, "Threads"): every object that wraps a library handle holds one
lock around each call and the destroy, so close() during a solve in another thread waits for it (it freed the
handle under the solve: heap use-after-free), a call after close raises ValueError, and many threads on one
Theory, on their own Theories, or on one Results give exactly the serial results (bit for bit: before the locks,
threads sharing a Theory raced on its Hessian workspaces and context, 11-15 of 40 solves differed). attnmech.torch
holds a lock per model. ~3 s."""
import threading

import numpy as np
import pytest

import attnmech as am

THREADS = 8
CALLS = 6  # calls per thread


def problem(seed, P=120):
    r = np.random.default_rng(seed)
    xi = np.asfortranarray(r.normal(size=(P, 4, 4)) / 4.0)
    return xi, np.sign(r.normal(size=P)), np.asfortranarray(r.normal(size=(30, 4, 4)) / 4.0)


def theory(seed=0, **kw):
    xi, y, _ = problem(seed)
    return am.Theory(xi, y, heads=[2, 2], widths=[10.0, 10.0, 10.0], temperature=0.1, **kw)


def everything(th, xt):
    """Every call of a Theory that reaches the handle, as numbers (one solve from the GP point first)."""
    sol = th.solve()
    a = th.action(sol, grad=True, hess=True)
    mean, var = th.predict(xt, sol)
    ov, ev = th.alignment(sol, k=5)
    return [np.concatenate([u.ravel() for u in sol.U]), np.array([sol.action, sol.U_a, sol.iterations]),
            th.kernel(sol), np.concatenate([g.ravel() for g in a.grad]), a.hess, mean, var, ov, ev,
            th.head_scores(sol), np.concatenate([u.ravel() for u in th.gp_point()])]


def differing(got, ref):
    return sum(1 for g in got if len(g) != len(ref) or not all(np.array_equal(a, b) for a, b in zip(g, ref)))


def in_threads(n, fn):
    """fn(i) in n threads at once (started together); the exceptions they raised, in order."""
    start, errors = threading.Barrier(n), []

    def run(i):
        start.wait()
        try:
            fn(i)
        except BaseException as e:  # noqa: B902 - reported to the test
            errors.append(e)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors


def test_threads_sharing_a_theory_get_the_serial_numbers_bit_for_bit():
    _, _, xt = problem(0)
    with theory() as th:
        ref = everything(th, xt)
        assert ref[1][2] >= 3  # a real Newton solve (iterations), not a start at the optimum
        got = []
        errors = in_threads(THREADS, lambda i: [got.append(everything(th, xt)) for _ in range(CALLS)])
        assert not errors
        assert len(got) == THREADS * CALLS and differing(got, ref) == 0


def test_threads_on_their_own_theories_get_the_serial_numbers_bit_for_bit():
    # The library's re-entrancy (distinct handles, one context each) and BLAS called from several threads at once.
    serial = []
    for i in range(4):
        with theory(i) as th:
            serial.append(everything(th, problem(i)[2]))
    got = {i: [] for i in range(4)}

    def work(i):
        with theory(i % 4) as th:
            for _ in range(CALLS // 2):
                got[i % 4].append(everything(th, problem(i % 4)[2]))

    assert not in_threads(THREADS, work)
    assert sum(differing(got[i], serial[i]) for i in range(4)) == 0 and sum(map(len, got.values())) == 24


def test_the_blas_rule_holds_for_every_thread_and_is_restored(monkeypatch):
    # The rule (one OpenBLAS thread inside library calls, docs/python.md "BLAS threads") is process-wide: with
    # threads entering and leaving calls at any time, every call must still see 1 and the user's count come back.
    blas = am._lib.core.am_blas_threads_set
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    if blas(0) == 0:
        pytest.skip("the BLAS in use has no thread control (not OpenBLAS)")
    saved = blas(2)
    try:
        if blas(0) != 2:
            pytest.skip("OpenBLAS refuses 2 threads here")
        seen = []
        ths = [theory(i % 2, progress=lambda done, total, label: seen.append(blas(0))) for i in range(THREADS)]
        assert not in_threads(THREADS, lambda i: [ths[i].solve() for _ in range(CALLS)])
        assert len(seen) >= THREADS * CALLS * 3 and set(seen) == {1} and blas(0) == 2
        for th in ths:
            th.close()
    finally:
        blas(saved)


def test_close_during_a_solve_waits_for_it_then_calls_raise():
    solving = threading.Event()
    th = theory(progress=lambda done, total, label: solving.set())
    ref = theory().solve()
    out = []

    def work():
        try:
            for _ in range(100):
                out.append(th.solve())
        except ValueError as e:
            out.append(e)

    t = threading.Thread(target=work)
    t.start()
    assert solving.wait(10)
    th.close()  # while a solve runs in the other thread: waits for it (freed it under the solve before)
    t.join()
    sols, err = out[:-1], out[-1]
    assert sols and all(np.array_equal(s.U[0], ref.U[0]) and s.action == ref.action for s in sols)
    assert isinstance(err, ValueError) and str(err) == (
        "Theory.solve: this Theory is closed (close() was called or its with-block ended)")
    for call in (lambda: th.predict(problem(0)[2]), th.kernel, th.gp_point, lambda: th.set_temperature(0.2)):
        with pytest.raises(ValueError, match=r"^Theory\.\w+: this Theory is closed"):
            call()
    th.close()  # idempotent
    assert repr(th) == "<attnmech.Theory (closed)>"


def test_close_from_many_threads_at_once_frees_once():
    ths = [theory() for _ in range(3)]
    for th in ths:
        th.solve()
    assert not in_threads(THREADS, lambda i: ths[i % 3].close())
    assert all(repr(th) == "<attnmech.Theory (closed)>" for th in ths)


def test_calls_from_the_objects_own_progress_callback_are_refused():
    seen = []

    def progress(done, total, label):
        for call in (lambda: th.kernel(), th.close):
            try:
                call()
            except RuntimeError as e:
                seen.append(str(e))
        return False

    th = theory(progress=progress)
    sol = th.solve()  # the callback's calls were refused; the solve itself is untouched
    assert sol.action == theory().solve().action and len(seen) == 2 * sol.iterations
    assert seen[0].startswith("Theory.kernel: called from the progress callback of a call running on this Theory")
    assert seen[1].startswith("Theory.close: called from the progress callback")
    th.close()


def test_an_exception_in_a_progress_callback_is_raised_by_its_call_in_any_thread():
    # It cancels the call and is raised from it. A call that ran in the calling thread (any thread but the main
    # one, and small solves in the main one) once returned "cancelled" with a warning and left the exception
    # pending, to be raised by a later call.
    ref = theory().solve()
    for where in ("main thread", "other thread"):
        calls = []

        def progress(done, total, label):
            calls.append(done)
            if len(calls) == 1:
                raise ZeroDivisionError(f"from the callback ({where})")

        with theory(progress=progress) as th:
            errors = in_threads(1, lambda i: th.solve()) if where == "other thread" else []
            if where == "main thread":
                with pytest.raises(ZeroDivisionError) as ei:
                    th.solve()
                errors = [ei.value]
            assert [str(e) for e in errors] == [f"from the callback ({where})"] and len(calls) == 1
            again = th.solve()  # nothing left pending
            assert again.status == "converged" and np.array_equal(again.U[0], ref.U[0])


def test_results_shared_between_threads():
    r = am.run(estimator="replica", nu=3, alpha=[0.5, 1, 2], threads=1, progress=False)
    ref = r.summary()
    texts = []
    assert not in_threads(THREADS, lambda i: [texts.append(r.summary()) for _ in range(CALLS)])
    assert len(texts) == THREADS * CALLS and set(texts) == {ref}
    out = []

    def work(i):
        try:
            for _ in range(200):
                out.append(r.summary())
        except ValueError as e:
            out.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    r.close()
    for t in ts:
        t.join()
    errors = [x for x in out if isinstance(x, ValueError)]
    assert len(errors) == 4 and all(x == ref for x in out if not isinstance(x, ValueError))
    assert str(errors[0]).startswith("Results.summary: this Results is closed (Results.close() freed")
    assert r["estimator"] == "replica"  # the dict stays


def test_runs_in_threads_equal_the_serial_run():
    kw = dict(P=30, P_test=30, widths=[10], threads=1, progress=False)
    ref = am.run("markov", **kw)["runs"][0]
    got = []
    assert not in_threads(3, lambda i: got.append(am.run("markov", **kw)["runs"][0]))
    for run in got:
        assert np.array_equal(run["test"]["mean"], ref["test"]["mean"]) and run["action"] == ref["action"]
        assert all(np.array_equal(a, b) for a, b in zip(run["U"], ref["U"]))


def test_torch_helpers_on_one_model_from_threads():
    torch = pytest.importorskip("torch")
    import attnmech.torch as amt
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.att = torch.nn.MultiheadAttention(6, 3, batch_first=True, bias=False)
            self.out = torch.nn.Linear(6, 1)

        def forward(self, x):
            return self.out(self.att(x, x, x)[0][:, -1]).squeeze(-1)

    net = Net().double().eval()
    X = torch.randn(24, 5, 6, dtype=torch.float64)
    y = np.where(net(X).detach().numpy() >= 0, 1.0, -1.0)
    weights = net.att.out_proj.weight.detach().clone()
    ref_att = amt.attention(net, X, warn=False)[0][0]
    ref_acc = {}
    for k in range(3):
        with amt.ablate(net, [k]):
            ref_acc[k] = amt.accuracy(net, X, y)
    got = []

    def work(i):
        for _ in range(2):
            with amt.ablate(net, [i % 3]):
                got.append((i % 3, amt.accuracy(net, X, y)))
            got.append(("att", amt.attention(net, X, warn=False)[0][0]))

    assert not in_threads(6, work)
    assert all(np.array_equal(v, ref_att) if k == "att" else v == ref_acc[k] for k, v in got) and len(got) == 24
    assert torch.equal(net.att.out_proj.weight, weights) and "forward" not in net.att.__dict__
