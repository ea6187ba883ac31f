"""The dual Mean-CVaR LP handed to HiGHS directly against the same LP through cvxpy: the same
matrix, costs and bounds, and the same answers bit for bit, cold and warm-started."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

from alphaloop.exceptions import SolverError
from alphaloop.portfolio_opt import _lp


def _problem(rng: np.random.Generator, n_rows: int, n_assets: int, n_padding: int) -> dict:
    """One problem's numbers as ``cvar._solve_dual`` makes them, with zero-mass padding."""
    returns = rng.normal(0.0005, 0.02, size=(n_rows, n_assets))
    mass = rng.dirichlet(np.ones(n_rows))
    returns[n_rows - n_padding :] = 0.0
    mass[n_rows - n_padding :] = 0.0
    mass /= mass.sum()
    alpha, lam, cost = 0.95, float(rng.uniform(0.5, 3.0)), 0.001
    return {
        "scaled_returns": returns * (mass * (lam / (1.0 - alpha)))[:, None],
        "mass": mass,
        "tail_mass": 1.0 - alpha,
        "mean": returns.T @ mass,
        "cap": float(rng.uniform(1.2 / n_assets, 0.6)),
        "cost": cost,
        "cost_prev": cost * rng.dirichlet(np.ones(n_assets)),
    }


def _through_cvxpy(built: _lp._CvxpyMeanCvar, numbers: dict, warm: bool):
    built.set(**numbers)
    built.problem.solve(solver="HIGHS", warm_start=warm)
    return np.asarray(built.asset_rows.dual_value), float(built.problem.value)


@pytest.mark.parametrize(("n_rows", "n_assets", "has_prev"), [(12, 4, False), (256, 20, True)])
def test_the_matrix_is_cvxpy_canonical_form(n_rows: int, n_assets: int, has_prev: bool) -> None:
    numbers = _problem(np.random.default_rng(1), n_rows, n_assets, n_padding=3)
    direct = _lp.MeanCvarLP(n_rows, n_assets, has_prev)
    direct.set(**numbers)
    built = _lp._cvxpy_mean_cvar(n_rows, n_assets, has_prev)
    _through_cvxpy(built, numbers, warm=False)
    data, _, _ = built.problem.get_problem_data(cp.HIGHS)
    matrix = data[cp.settings.A].tocsc()
    assert np.array_equal(matrix.indptr, direct.start)
    assert np.array_equal(matrix.indices, direct.index)
    assert np.array_equal(matrix.data, direct.value)  # explicit zeros of the padding included
    assert np.array_equal(data[cp.settings.C], direct.cost)
    assert np.array_equal(data[cp.settings.B], direct.row_upper)
    assert data["dims"].zero == 1  # the one equality row, first: its bounds are both b's
    assert direct.row_lower[0] == direct.row_upper[0] and np.isneginf(direct.row_lower[1:]).all()
    assert np.array_equal(data[cp.settings.LOWER_BOUNDS], direct.col_lower)
    assert np.array_equal(data[cp.settings.UPPER_BOUNDS], direct.col_upper)


@pytest.mark.parametrize(("n_rows", "n_assets", "has_prev"), [(16, 5, False), (256, 20, True)])
def test_answers_are_cvxpy_s_bit_for_bit_cold_and_warm(
    n_rows: int, n_assets: int, has_prev: bool
) -> None:
    rng = np.random.default_rng(7)
    direct = _lp.MeanCvarLP(n_rows, n_assets, has_prev)
    built = _lp._cvxpy_mean_cvar(n_rows, n_assets, has_prev)
    for step in range(12):
        numbers = _problem(rng, n_rows, n_assets, n_padding=step % 3)
        warm = step % 4 != 0  # a new sequence every fourth solve, as trials start them
        direct.set(**numbers)
        assert direct.run_highs(warm) == "optimal"
        weights, value = _through_cvxpy(built, numbers, warm)
        assert np.array_equal(direct.weights, weights), step
        assert direct.objective == value, step


def test_a_failed_highs_solve_falls_back_to_clarabel(monkeypatch: pytest.MonkeyPatch) -> None:
    numbers = _problem(np.random.default_rng(3), 16, 5, n_padding=0)
    lp = _lp.MeanCvarLP(16, 5, True)
    lp.set(**numbers)
    monkeypatch.setattr(_lp.MeanCvarLP, "run_highs", lambda self, warm: "user_limit")
    assert _lp.solve(lp) == cp.OPTIMAL
    reference = _lp._cvxpy_mean_cvar(16, 5, True)
    weights, value = _through_cvxpy(reference, numbers, warm=False)
    np.testing.assert_allclose(lp.weights, weights, atol=1e-6)
    assert lp.objective == pytest.approx(value, abs=1e-7)


def test_no_solver_at_all_is_a_solver_error(monkeypatch: pytest.MonkeyPatch) -> None:
    lp = _lp.MeanCvarLP(16, 5, False)
    lp.set(**_problem(np.random.default_rng(4), 16, 5, n_padding=0))
    monkeypatch.setattr(_lp.MeanCvarLP, "run_highs", lambda self, warm: "infeasible")
    monkeypatch.setattr(_lp, "SOLVER_OPTIONS", {"HIGHS": {}})
    with pytest.raises(SolverError, match="HIGHS: status 'infeasible'"):
        _lp.solve(lp)


def _unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique`` over each row's bytes: first occurrences and counts, bytewise order."""
    keys = np.ascontiguousarray(rows).view(np.dtype((np.void, 8 * rows.shape[1]))).ravel()
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    return first, counts


def _row_sets() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    history = rng.normal(0.0005, 0.01, size=(300, 8))
    repeats = history[rng.integers(0, 300, size=4000)]
    signed_zeros = np.zeros((50, 3))
    signed_zeros[::2, 1] = -0.0  # equal in value, not in bytes: separate atoms
    return [repeats, history, np.ones((40, 2)), signed_zeros, rng.normal(size=(1, 5))]


@pytest.mark.parametrize("rows", _row_sets())
def test_distinct_rows_are_np_unique_s_over_bytes(rows: np.ndarray) -> None:
    first, counts = _lp._distinct_rows(rows)
    expected_first, expected_counts = _unique_rows(rows)
    assert np.array_equal(first, expected_first) and np.array_equal(counts, expected_counts)


def test_a_hash_collision_falls_back_to_the_full_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _row_sets()[0]
    monkeypatch.setattr(_lp, "_row_hash", lambda words: np.zeros(len(words), dtype=np.uint64))
    first, counts = _lp._distinct_rows(rows)
    expected_first, expected_counts = _unique_rows(rows)
    assert np.array_equal(first, expected_first) and np.array_equal(counts, expected_counts)
