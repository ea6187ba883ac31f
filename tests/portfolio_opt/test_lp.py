"""The dual Mean-CVaR LP handed to HiGHS directly against the same LP written in cvxpy, the
reference: the same matrix, costs and bounds and the same answers bit for bit; warm-started,
with a return target and with scenarios added, the same optimum."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from scipy import sparse

from alphaloop.exceptions import SolverError
from alphaloop.portfolio_opt import _lp


def cvxpy_mean_cvar(
    numbers: dict, has_prev: bool, has_target: bool = False
) -> tuple[cp.Problem, cp.Constraint]:
    """The dual LP of :class:`_lp.MeanCvarLP`'s docstring written term by term in cvxpy, with
    ``numbers`` as constants; the problem and its asset rows (whose duals are the weights)."""
    scaled, mass = numbers["scaled_returns"], numbers["mass"]
    n_rows, n_assets = scaled.shape
    q = cp.Variable(n_rows, bounds=[np.zeros(n_rows), mass])
    nu = cp.Variable()
    eta = cp.Variable(n_assets, bounds=[0, None])
    lhs = scaled.T @ q + numbers["mean"] + nu - eta
    objective = nu - numbers["cap"] * cp.sum(eta)
    if has_prev:
        d = cp.Variable(n_assets, bounds=[-1, 1])
        lhs = lhs - numbers["cost"] * d
        objective = objective - numbers["cost_prev"] @ d
    if has_target:
        t = cp.Variable(nonneg=True)
        lhs = lhs + t * numbers["target_returns"]
        objective = objective + numbers["target"] * t
    asset_rows = lhs <= 0
    problem = cp.Problem(cp.Maximize(objective), [asset_rows, cp.sum(q) == numbers["tail_mass"]])
    return problem, asset_rows


def _problem(rng: np.random.Generator, n_rows: int, n_assets: int, n_padding: int) -> dict:
    """One problem's numbers as ``_cutting`` makes them, with zero-mass padding."""
    returns = rng.normal(0.0005, 0.02, size=(n_rows, n_assets))
    mass = rng.dirichlet(np.ones(n_rows))
    returns[n_rows - n_padding :] = 0.0
    mass[n_rows - n_padding :] = 0.0
    mass /= mass.sum()
    alpha, lam, cost = 0.95, float(rng.uniform(0.5, 3.0)), 0.001
    return {
        "scaled_returns": returns / (1.0 - alpha),
        "mass": mass,
        "tail_mass": 1.0 - alpha,
        "mean": (returns.T @ mass) / lam,
        "cap": float(rng.uniform(1.2 / n_assets, 0.6)),
        "cost": cost / lam,
        "cost_prev": cost / lam * rng.dirichlet(np.ones(n_assets)),
    }


def _through_cvxpy(numbers: dict, has_prev: bool, has_target: bool = False):
    problem, asset_rows = cvxpy_mean_cvar(numbers, has_prev, has_target)
    problem.solve(solver="HIGHS")
    return np.asarray(asset_rows.dual_value), float(problem.value)


@pytest.mark.parametrize(("n_rows", "n_assets", "has_prev"), [(12, 4, False), (256, 20, True)])
def test_the_matrix_is_cvxpy_canonical_form(n_rows: int, n_assets: int, has_prev: bool) -> None:
    numbers = _problem(np.random.default_rng(1), n_rows, n_assets, n_padding=3)
    direct = _lp.MeanCvarLP(n_rows, n_assets, has_prev)
    direct.set(**numbers)
    problem, _ = cvxpy_mean_cvar(numbers, has_prev)
    data, _, _ = problem.get_problem_data(cp.HIGHS)
    ours = sparse.csc_array(
        (direct.value, direct.index, direct.start), shape=(n_assets + 1, direct.n_cols)
    )
    # The same entries; ours keeps a padding row's zeros, which cvxpy's constants drop.
    assert np.array_equal(data[cp.settings.A].toarray(), ours.toarray())
    assert np.array_equal(data[cp.settings.C], direct.cost)
    assert np.array_equal(data[cp.settings.B], direct.row_upper)
    assert data["dims"].zero == 1  # the one equality row, first: its bounds are both b's
    assert direct.row_lower[0] == direct.row_upper[0] and np.isneginf(direct.row_lower[1:]).all()
    assert np.array_equal(data[cp.settings.LOWER_BOUNDS], direct.col_lower)
    assert np.array_equal(data[cp.settings.UPPER_BOUNDS], direct.col_upper)


@pytest.mark.parametrize(("n_rows", "n_assets", "has_prev"), [(16, 5, False), (256, 20, True)])
def test_answers_are_cvxpy_s_bit_for_bit_and_warm_starts_find_them(
    n_rows: int, n_assets: int, has_prev: bool
) -> None:
    rng = np.random.default_rng(7)
    direct = _lp.MeanCvarLP(n_rows, n_assets, has_prev)
    for step in range(8):
        numbers = _problem(rng, n_rows, n_assets, n_padding=step % 3)
        direct.set(**numbers)
        weights, value = _through_cvxpy(numbers, has_prev)
        assert direct.run_highs(warm=False) == "optimal"
        assert np.array_equal(direct.weights, weights), step
        assert direct.objective == value, step
        # Started from the previous problem's optimum, as a backtest's solves are: the same
        # optimum (a vertex reached by another path may differ in the last bits).
        direct.set(**_problem(np.random.default_rng(step), n_rows, n_assets, n_padding=0))
        assert direct.run_highs(warm=False) == "optimal"
        direct.set(**numbers)
        assert direct.run_highs(warm=True) == "optimal"
        assert direct.objective == pytest.approx(value, rel=1e-12, abs=1e-15), step
        np.testing.assert_allclose(direct.weights, weights, atol=1e-10)


def test_a_target_column_gives_cvxpy_s_optimum() -> None:
    rng = np.random.default_rng(8)
    numbers = _problem(rng, 200, 12, n_padding=0)
    # Minimum CVaR (no mean term) at a return no capped portfolio of the cheapest assets has.
    target_returns = rng.normal(0.001, 0.002, 12)
    numbers |= {"mean": np.zeros(12), "cap": 0.3, "target_returns": target_returns}
    numbers["target"] = float(np.quantile(target_returns, 0.6))
    direct = _lp.MeanCvarLP(200, 12, True, has_target=True)
    direct.set(**numbers)
    assert direct.run_highs(warm=False) == "optimal"
    weights, value = _through_cvxpy(numbers, True, has_target=True)
    assert direct.objective == pytest.approx(value, rel=1e-9)
    np.testing.assert_allclose(direct.weights, weights, atol=1e-7)
    assert direct.weights @ numbers["target_returns"] >= numbers["target"] - 1e-9
    assert direct.target_multiplier > 0  # the target binds


def test_scenarios_added_to_a_solved_lp_give_the_whole_lp_s_optimum() -> None:
    numbers = _problem(np.random.default_rng(9), 300, 10, n_padding=0)
    whole = _lp.MeanCvarLP(300, 10, True)
    whole.set(**numbers)
    assert whole.run_highs(warm=False) == "optimal"
    first = {**numbers, "scaled_returns": numbers["scaled_returns"][:120]}
    first["mass"] = numbers["mass"][:120]
    grown = _lp.MeanCvarLP(120, 10, True)
    grown.set(**first)
    assert grown.run_highs(warm=False) == "optimal"
    for rows in (slice(120, 200), slice(200, 300)):
        status = grown.add_scenarios(numbers["scaled_returns"][rows], numbers["mass"][rows])
        assert status == "optimal"
    assert grown.n_rows == 300
    assert grown.objective == pytest.approx(whole.objective, rel=1e-12)
    np.testing.assert_allclose(grown.weights, whole.weights, atol=1e-9)
    np.testing.assert_allclose(grown.tail_mass.sum(), 0.05, rtol=1e-12)


def test_a_failed_highs_solve_is_a_solver_error(monkeypatch: pytest.MonkeyPatch) -> None:
    lp = _lp.MeanCvarLP(16, 5, False)
    lp.set(**_problem(np.random.default_rng(4), 16, 5, n_padding=0))
    monkeypatch.setattr(_lp.MeanCvarLP, "run_highs", lambda self, warm: "infeasible")
    with pytest.raises(SolverError, match="HiGHS returned no solution \\(status 'infeasible'\\)"):
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


def test_rows_equal_on_the_key_columns_only_stay_apart() -> None:
    # Distinct rows that agree on every column the first hash reads: the check against each
    # group's first row catches them, and the rows come out as np.unique's.
    rng = np.random.default_rng(6)
    rows = np.tile(rng.normal(size=(1, 40)), (30, 1))
    read = np.unique(np.linspace(0, 39, _lp._KEY_COLUMNS).astype(int))
    unread = np.setdiff1d(np.arange(40), read)
    rows[:, unread] = rng.normal(size=(30, len(unread)))[rng.integers(0, 7, size=30)]
    first, counts = _lp._distinct_rows(rows)
    expected_first, expected_counts = _unique_rows(rows)
    assert np.array_equal(first, expected_first) and np.array_equal(counts, expected_counts)


@pytest.mark.parametrize(("n_padding", "presolve"), [(0, "off"), (3, "choose")])
def test_presolve_runs_only_where_padding_gives_it_columns_to_remove(
    n_padding: int, presolve: str
) -> None:
    numbers = _problem(np.random.default_rng(8), 24, 6, n_padding=n_padding)
    lp = _lp.MeanCvarLP(24, 6, False)
    lp.set(**numbers)
    assert lp.run_highs(warm=False) == "optimal"
    assert lp._highs.getOptionValue("presolve")[1] == presolve
    weights, value = _through_cvxpy(numbers, False)  # HiGHS with presolve, through cvxpy
    assert np.array_equal(lp.weights, weights) and lp.objective == value
