"""Random and hostile inputs at the compiled core's Python boundary: ``arena.make`` parameters,
action arrays given to ``step`` and fields given to ``set_world_state``.

Every input must meet one contract: either a ``ValueError`` whose message names the offending
parameter or field, or a valid step whose observations (and final observations) are all finite.
Never a crash, never NaN or inf in an observation. Valid input must be taken as it is: accepted,
and stepped exactly as its canonical form would be.

The real compiled core, no mocks; ``.ci/run`` also runs this file under AddressSanitizer and
UndefinedBehaviorSanitizer. Examples are derandomized (the same on every run) and bounded, so
the file takes seconds.
"""

from __future__ import annotations

import math
import warnings
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import arena
from arena.envs.registry import MAX_ENVS
from arena.games import GAMES, spec
from arena.games.midrange.params import MAX_TEAM, MIDRANGE_PARAMS
from arena.games.spec import Param

BOUNDED = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Values no parameter or field should take silently: non-finite, huge, negative, of the wrong
# Python type, numpy scalars, the smallest subnormal.
HOSTILE_SCALARS: list[Any] = [
    math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -5e-324, 2**31, 2**63, 2**64 + 3, -(2**63),
    -1, 0, -0.0, 0.5, True, False, "1", "nan", None, [1], (1, 1), 1 + 2j,
    np.float32("nan"), np.float64("inf"), np.int64(-1), np.uint64(2**64 - 1), np.int8(3), 10**400,
    -(10**400), Fraction(1, 3), Decimal("1"),
]


def in_range(p: Param) -> st.SearchStrategy[Any]:
    """Values inside the parameter's range, its bounds often: odd but valid games."""
    if p.choices:
        return st.sampled_from(p.choices)
    inside = st.integers(int(p.low), int(p.high)) if p.kind is int else st.floats(p.low, p.high)
    return st.one_of(inside, st.sampled_from([p.low, p.high]), st.just(p.default))


def hostile_or_in_range(p: Param) -> st.SearchStrategy[Any]:
    """As often as not a valid value, else values just outside the range, the hostile scalars,
    or any float (a text parameter: other spellings and non-strings)."""
    if p.choices:
        near = [c.upper() for c in p.choices] + [c + " " for c in p.choices] + ["", "bogus"]
        return st.one_of(in_range(p), in_range(p), st.sampled_from(near), st.sampled_from(HOSTILE_SCALARS))
    edges = [p.low - 1, p.high + 1, p.low * (1 - 1e-12) - 1e-300, p.high * (1 + 1e-12)]
    return st.one_of(in_range(p), in_range(p), in_range(p), st.sampled_from(edges),
                     st.sampled_from(HOSTILE_SCALARS), st.floats())


def assert_finite(name: str, values: np.ndarray) -> None:
    bad = ~np.isfinite(values)
    assert not bad.any(), f"{name} holds NaN or inf at {np.argwhere(bad)[:5].tolist()}"


def random_actions(env: arena.VectorEnv, rng: np.random.Generator) -> np.ndarray:
    """Uniform random actions; in a game with a legal-action mask, uniform among the legal ones."""
    nvec = np.asarray(env.action_space.nvec)
    mask = spec(env.game).mask_of(env.observations, env.params, env.team_sizes)
    if mask is None:
        return rng.integers(0, nvec, size=(env.num_agents, len(nvec)), dtype=np.int32)
    heads = np.split(mask, np.cumsum(nvec)[:-1], axis=1)
    return np.stack([np.where(legal, rng.random(legal.shape), -1.0).argmax(axis=1) for legal in heads],
                    axis=1).astype(np.int32)


def play(env: arena.VectorEnv, decisions: int, seed: int = 0) -> None:
    """Random valid decisions; every observation, final observation and reward stays finite."""
    event("accepted and played")
    rng = np.random.default_rng(seed)
    assert_finite("the observation", env.observations)
    for _ in range(decisions):
        obs, rewards, _, _, infos = env.step(random_actions(env, rng))
        assert_finite("the observation", obs)
        assert_finite("the final observation", infos["final_observation"])
        assert_finite("the reward", rewards)


def assert_names(err: ValueError, names: list[str]) -> None:
    event("rejected")
    assert any(name in str(err) for name in names), f"{str(err)!r} names none of {names}"


# ---------------------------------------------------------------- make()


TEAM_SIZES = st.tuples(st.integers(1, MAX_TEAM), st.integers(1, MAX_TEAM))


def valid_or(valid: st.SearchStrategy[Any], invalid: list[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(valid, valid, st.sampled_from(invalid))


@st.composite
def make_arguments(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    game = draw(st.sampled_from(GAMES))
    table = spec(game).params
    names = draw(st.lists(st.sampled_from(sorted(table)), max_size=6, unique=True))
    kwargs: dict[str, Any] = {name: draw(hostile_or_in_range(table[name])) for name in names}
    if draw(st.integers(0, 9)) == 0:
        kwargs[draw(st.sampled_from(["bogus", "timelimit", "rounds", "frame_skip"]))] = 1
    size = st.one_of(
        st.integers(1, MAX_TEAM), st.integers(-1, MAX_TEAM + 1), st.sampled_from(HOSTILE_SCALARS)
    )
    kwargs["team_sizes"] = draw(
        st.one_of(
            st.just((1, 1)), TEAM_SIZES, TEAM_SIZES, st.tuples(size, size), st.lists(size, max_size=3),
            st.sampled_from(["11", None, 2, np.array([1, 1]), {1: 1}]),
        )
    )
    # Small batches only: a valid num_envs of millions would allocate gigabytes.
    kwargs["num_envs"] = draw(valid_or(st.integers(1, 3), [0, -1, MAX_ENVS + 1, 2.0, "2"]))
    kwargs["num_threads"] = draw(valid_or(st.integers(1, 2), [0, 1025, 1.0, "1"]))
    kwargs["seed"] = draw(valid_or(st.integers(0, 2**64), [-1, 1.5, "0", True]))
    return game, kwargs


@BOUNDED
@given(make_arguments())
def test_make_with_any_arguments_steps_finite_games_or_names_the_bad_argument(args):
    game, kwargs = args
    try:
        env = arena.make(game, **kwargs)
    except ValueError as err:
        assert_names(err, list(kwargs))
        return
    play(env, decisions=12)


@settings(BOUNDED, max_examples=300)
@given(st.data())
def test_every_parameter_anywhere_in_its_range_steps_finite_games_or_names_the_conflict(data):
    # All parameters at once, at their bounds as often as inside them: the combinations that make
    # drag overshoot, divide by tiny numbers or spawn fighters outside the arena.
    kwargs = {name: data.draw(in_range(p), label=name) for name, p in MIDRANGE_PARAMS.items()}
    kwargs["team_sizes"] = data.draw(TEAM_SIZES, label="team_sizes")
    if data.draw(st.integers(0, 4), label="spawn inside the arena"):  # else the spawn check's turn
        top = min(MIDRANGE_PARAMS["spawn_distance_max_m"].high, 1.999 * kwargs["arena_radius_m"])
        share = data.draw(st.sampled_from([0.0, 1.0, 0.5]) | st.floats(0, 1), label="max spawn share")
        kwargs["spawn_distance_max_m"] = top * share
        kwargs["spawn_distance_min_m"] = top * share * data.draw(st.floats(0, 1), label="min spawn share")
    try:
        env = arena.make("midrange", num_envs=2, num_threads=1, **kwargs)
    except ValueError as err:
        assert_names(err, list(MIDRANGE_PARAMS))
        return
    play(env, decisions=12)


@BOUNDED
@given(st.sampled_from(sorted(MIDRANGE_PARAMS)), st.data())
def test_set_params_with_any_value_keeps_stepping_finite_or_names_the_parameter(name, data):
    env = arena.make("midrange", num_envs=3, num_threads=1, team_sizes=(2, 1))
    value = data.draw(hostile_or_in_range(MIDRANGE_PARAMS[name]))
    before = dict(env.params)
    try:
        env.set_params(**{name: value})
    except ValueError as err:
        assert_names(err, [name])
        assert env.params == before, "a refused change leaves the parameters as they were"
    play(env, decisions=6)
    env.reset(seed=1)
    play(env, decisions=6)


@BOUNDED
@given(
    team_size=st.tuples(st.integers(-2, MAX_TEAM + 3), st.integers(-2, MAX_TEAM + 3)),
    missiles_per_fighter=st.integers(-2, 12),
    tracked_missiles=st.integers(-2, 12),
    frame_skip=st.integers(-2, 3),
    dt=st.sampled_from([1 / 60, 0.1, 0.0, -0.01, math.nan, math.inf, 1e-300]),
    num_envs=st.integers(-2, 3),
)
def test_the_raw_core_refuses_parameters_that_would_overflow_its_fixed_size_state(**fields):
    # arena._core itself, without make()'s validation in front: what sizes its arrays is checked.
    from arena import _core

    params = _core.MidrangeParams()
    num_envs = fields.pop("num_envs")
    for name, value in fields.items():
        setattr(params, name, value)
    try:
        batch = _core.MidrangeBatch(params, num_envs, 1, "cpu")
    except ValueError as err:
        assert_names(err, [*fields, "num_envs"])
        return
    event("accepted")
    batch.reset(1)
    rows, rng = num_envs * sum(fields["team_size"]), np.random.default_rng(0)
    for _ in range(3):
        batch.step(rng.integers(0, [5, 3, 2], size=(rows, 3)).astype(np.int32), 0, num_envs)
        assert_finite("the observation", batch.obs)


# ---------------------------------------------------------------- step(actions)

ACTION_DTYPES = [
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16,
    np.float32, np.float64, np.bool_, np.complex128, object, ">i4", ">f8", "<U4", "datetime64[s]",
]
ODD_ACTIONS = [
    math.nan, math.inf, -math.inf, 0.5, -0.0, 1e300, -1e300, 2**31, 2**32 + 2, 2**63, -(2**40), -1, 5,
]
LAYOUTS = ["c", "fortran", "strided", "reversed", "readonly", "list", "tuple"]


def relayout(a: np.ndarray, layout: str) -> Any:
    """The same values in another memory layout, or as Python sequences."""
    if a.ndim == 0:
        return a
    if layout == "fortran":
        return np.asfortranarray(a)
    if layout == "strided":
        return np.repeat(a, 2, axis=0)[::2]
    if layout == "reversed":  # negative strides
        return np.flip(np.flip(a, axis=0).copy(), axis=0)
    if layout == "readonly":
        a = a.copy()
        a.flags.writeable = False
        return a
    if layout == "list":
        return a.tolist()
    if layout == "tuple":
        return tuple(map(tuple, a.tolist())) if a.ndim == 2 else tuple(a.tolist())
    return np.ascontiguousarray(a)


def cast(values: np.ndarray, dtype: Any) -> np.ndarray:
    """``values`` in ``dtype`` however lossy, as a careless caller would convert them."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        kind = np.dtype(dtype).kind
        if kind == "U":
            return values.astype("<U8")
        if kind == "M":
            return np.nan_to_num(values).astype(np.int64).astype(dtype)
        return values.astype(dtype)


def canonical_actions(actions: Any, rows: int, nvec: np.ndarray) -> np.ndarray | None:
    """The int32 [rows, dims] array a valid ``actions`` stands for, or None where it is invalid."""
    dims = len(nvec)
    try:
        a = np.asarray(actions)
    except ValueError:
        return None
    if a.shape == (rows,) and dims == 1:
        a = a.reshape(rows, 1)
    if a.shape != (rows, dims) or a.dtype.kind not in "biuf":
        return None
    with np.errstate(all="ignore"):
        if a.dtype.kind in "iu":  # exact: compare integers as integers
            ok = (a >= 0).all() and (a < nvec).all()
            return a.astype(np.int32) if ok else None
        v = a.astype(np.float64)
        ok = np.isfinite(v).all() and (v == np.round(v)).all() and (v >= 0).all() and (v < nvec).all()
    return v.astype(np.int32) if ok else None


@st.composite
def action_inputs(draw: st.DrawFn, rows: int, dims: int) -> Any:
    wrong = [(rows,), (dims, rows), (rows, dims + 1), (rows - 1, dims), (rows, dims, 1), (), (0, dims)]
    shape = draw(st.sampled_from([(rows, dims)] * 6 + wrong))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = rng.integers(0, 2, size=shape).astype(np.float64)  # valid in every dimension
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        if values.size:
            values.reshape(-1)[draw(st.integers(0, values.size - 1))] = draw(st.sampled_from(ODD_ACTIONS))
    a = cast(values, draw(st.sampled_from(ACTION_DTYPES)))
    kind = draw(st.sampled_from(["array"] * 8 + ["ragged", "none", "string", "dict"]))
    if kind == "ragged":
        return [[0, 1, 0]] * (rows - 1) + [[0, 1]]
    if kind == "none":
        return None
    if kind == "string":
        return "0 1 0"
    if kind == "dict":
        return {"actions": a}
    return relayout(a, draw(st.sampled_from(LAYOUTS)))


@pytest.mark.parametrize("game, team_sizes", [("midrange", (2, 1)), ("rpsw", (1, 1))])
@BOUNDED
@given(data=st.data())
def test_any_actions_step_exactly_as_their_int32_form_or_are_rejected_naming_them(game, team_sizes, data):
    env = arena.make(game, num_envs=2, num_threads=1, team_sizes=team_sizes, seed=4)
    twin = arena.make(game, num_envs=2, num_threads=1, team_sizes=team_sizes, seed=4)
    nvec = np.asarray(env.action_space.nvec)
    actions = data.draw(action_inputs(env.num_agents, len(nvec)))
    expected = canonical_actions(actions, env.num_agents, nvec)
    before = env.world_state()
    try:
        obs, *_ = env.step(actions)
    except ValueError as err:
        assert expected is None, f"valid actions {expected.tolist()} were rejected: {err}"
        assert_names(err, ["action"])
        after = env.world_state()
        for key in before:
            np.testing.assert_array_equal(after[key], before[key], err_msg=f"a rejected step changed {key}")
        return
    assert expected is not None, f"invalid actions {actions!r} were accepted"
    event("accepted")
    twin_obs, *_ = twin.step(expected)
    np.testing.assert_array_equal(obs, twin_obs, err_msg="stepped unlike the canonical int32 actions")
    assert_finite("the observation", obs)


ODD_INDICES = [-1, 3, 2**31, 2**63, -(2**63), 1.0, 0.5, math.nan, math.inf, None, "1", True, False]


@BOUNDED
@given(valid_or(st.integers(0, 2), ODD_INDICES), valid_or(st.integers(0, 2), ODD_INDICES))
def test_stepping_any_env_range_steps_it_or_names_the_range(begin, end):
    env = arena.make("midrange", num_envs=2, num_threads=1)
    actions = np.zeros((env.num_agents, 3), np.int32)
    valid = all(type(x) is int for x in (begin, end)) and 0 <= begin <= end <= 2
    try:
        env.step_envs(actions, begin, end)
    except ValueError as err:
        assert not valid, f"the valid range [{begin}, {end}) was rejected: {err}"
        assert_names(err, ["begin", "end", "range"])
        return
    assert valid, f"the invalid range ({begin!r}, {end!r}) was accepted"
    event("accepted")
    assert_finite("the observation", env.observations)


# ---------------------------------------------------------------- set_world_state(state)

REAL_FIELDS = ["fighter_x", "fighter_y", "fighter_vx", "fighter_vy", "fighter_cooldown", "missile_x",
               "missile_y", "missile_vx", "missile_vy", "missile_tof"]
INT_FIELDS = ["fighter_missiles", "missile_owner", "missile_target", "physics_steps", "decisions"]
BOOL_FIELDS = ["fighter_alive", "missile_active"]
FIELDS = REAL_FIELDS + INT_FIELDS + BOOL_FIELDS
FIELD_DTYPES = [
    np.float64, np.float32, np.float16, np.int64, np.int32, np.int8, np.uint8, np.uint64, np.bool_,
    np.complex128, object, ">f8", "<U8",
]
FIELD_VALUES = [
    math.nan, math.inf, -math.inf, 1e300, -1e300, 3.4e38, 1e12, -1e12, 1e9, 2**31, -(2**31) - 1, 2**63, -1,
    -0.5, 0.5, 0, 1, 2, 7, 5e-324,
]


def a_world_state(env: arena.VectorEnv, rng: np.random.Generator, missiles: bool) -> dict[str, np.ndarray]:
    """A valid state of every env: fighters anywhere in the arena at up to 1.2 km/s, some
    dead, and (``missiles``) each fighter's first missile in flight at a random enemy."""
    ws = env.world_state()
    shape = ws["fighter_x"].shape
    radius = env.params["arena_radius_m"]
    ws["fighter_x"], ws["fighter_y"] = rng.uniform(-0.7 * radius, 0.7 * radius, (2, *shape))
    ws["fighter_vx"], ws["fighter_vy"] = rng.uniform(-850.0, 850.0, (2, *shape))
    ws["fighter_alive"] = rng.random(shape) < 0.8
    if missiles:
        n0, n1 = env.team_sizes
        mpf = env.params["missiles_per_fighter"]
        for i in range(n0 + n1):
            k = i * mpf
            enemies = range(n0, n0 + n1) if i < n0 else range(n0)
            ws["missile_active"][:, k] = True
            ws["missile_owner"][:, k] = i
            ws["missile_target"][:, k] = rng.choice(list(enemies), size=shape[0])
            ws["missile_x"][:, k] = ws["fighter_x"][:, i] + rng.uniform(-5000, 5000, shape[0])
            ws["missile_y"][:, k] = ws["fighter_y"][:, i] + rng.uniform(-5000, 5000, shape[0])
            ws["missile_vx"][:, k], ws["missile_vy"][:, k] = rng.uniform(-1500.0, 1500.0, (2, shape[0]))
            ws["missile_tof"][:, k] = rng.uniform(0.0, env.params["missile_max_time_s"], shape[0])
            ws["fighter_missiles"][:, i] = mpf - 1
    return ws


@st.composite
def hostile_field(draw: st.DrawFn, value: np.ndarray) -> Any:
    """``value`` (a valid field) made hostile one way: odd values at random places, another
    dtype, shape or layout, Python sequences, or no array at all."""
    how = draw(st.sampled_from(["values", "values", "dtype", "shape", "layout", "not_numeric"]))
    if how == "values":
        v = value.astype(np.float64)
        flat = v.reshape(-1)
        for _ in range(draw(st.integers(1, 3))):
            flat[draw(st.integers(0, flat.size - 1))] = draw(st.sampled_from(FIELD_VALUES))
        keep = draw(st.booleans())  # the field's own dtype, however lossy, or float64
        return cast(v, value.dtype) if keep else v
    if how == "dtype":
        return relayout(cast(value.astype(np.float64), draw(st.sampled_from(FIELD_DTYPES))), "c")
    if how == "shape":
        shape = draw(st.sampled_from([
            value.shape[::-1], (*value.shape, 1), value.shape[:-1], (value.size,), (), (0, *value.shape[1:]),
        ]))
        return np.resize(value, shape) if shape else value.reshape(-1)[0]
    if how == "layout":
        return relayout(value, draw(st.sampled_from(LAYOUTS)))
    return draw(st.sampled_from(["0", None, b"\x00" * 8, {"x": 1}, [[1, 2], [3]]]))


def roundtrip_equal(given_value: Any, got: np.ndarray) -> bool:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.array_equal(np.asarray(given_value).astype(np.float64), got.astype(np.float64))


@pytest.mark.parametrize("team_sizes", [(1, 1), (2, 1), (4, 4)])
@BOUNDED
@given(data=st.data())
def test_any_world_state_plays_finite_games_or_is_rejected_naming_the_field(team_sizes, data):
    env = arena.make("midrange", num_envs=3, num_threads=1, team_sizes=team_sizes, time_limit_s=60, seed=2)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    before = env.world_state()
    ws: dict[str, Any] = a_world_state(env, rng, missiles=data.draw(st.booleans()))
    changed = data.draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique=True))
    for key in changed:
        ws[key] = data.draw(hostile_field(ws[key]))
    extra = data.draw(st.sampled_from([None, None, None, "missing", "unknown", "not_a_dict"]))
    if extra == "missing":
        key = data.draw(st.sampled_from(FIELDS))
        changed.append(key)
        del ws[key]
    elif extra == "unknown":
        changed.append("fighter_z")
        ws["fighter_z"] = np.zeros_like(ws["fighter_x"])
    try:
        obs = env.set_world_state(list(ws.items()) if extra == "not_a_dict" else ws)
    except ValueError as err:
        assert changed or extra, f"a valid world state was rejected: {err}"
        assert_names(err, [*changed, "state"] if extra == "not_a_dict" else changed)
        after = env.world_state()
        for key in before:
            np.testing.assert_array_equal(after[key], before[key], err_msg=f"a rejected state changed {key}")
        return
    assert not extra, f"a state with {extra} fields was accepted"
    assert_finite("the observation after set_world_state", obs)
    got = env.world_state()
    for key in changed:
        assert roundtrip_equal(ws[key], got[key]), f"{key} was taken as {got[key]!r}, given {ws[key]!r}"
    play(env, decisions=25)


@BOUNDED
@given(data=st.data())
def test_valid_world_states_are_accepted_as_given_and_play_finite_games(data):
    env = arena.make("midrange", num_envs=4, num_threads=1, team_sizes=(2, 2), seed=3)
    ws = a_world_state(env, np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), missiles=True)
    obs = env.set_world_state(ws)
    assert_finite("the observation after set_world_state", obs)
    got = env.world_state()
    for key in FIELDS:
        np.testing.assert_array_equal(got[key], ws[key], err_msg=key)
    play(env, decisions=60)


@BOUNDED
@given(data=st.data())
def test_any_goofspiel_bids_step_as_their_int32_form_or_are_rejected_leaving_the_game_as_it_was(data):
    """Goofspiel adds a rule to the action space: a bid must be a card still in the hand. A bid
    array is played exactly as its int32 form when every bid is legal, else refused with a
    ValueError naming the action, the game left as it was (the next legal step matches a twin's)."""
    env = arena.make("goofspiel", num_envs=2, num_threads=1, num_cards=4, seed=4)
    twin = arena.make("goofspiel", num_envs=2, num_threads=1, num_cards=4, seed=4)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    for _ in range(data.draw(st.integers(0, 3))):  # some rounds in: cards are gone from the hands
        bids = random_actions(env, rng)
        env.step(bids)
        twin.step(bids)
    actions = data.draw(action_inputs(env.num_agents, 1))
    expected = canonical_actions(actions, env.num_agents, np.asarray(env.action_space.nvec))
    hands = env.observations[:, :4] > 0.5
    legal = expected is not None and bool(hands[np.arange(env.num_agents), expected[:, 0]].all())
    before = env.observations.copy()
    try:
        obs, *_ = env.step(actions)
    except ValueError as err:
        assert not legal, f"legal bids {expected.tolist()} were rejected: {err}"
        assert_names(err, ["action"])
        np.testing.assert_array_equal(env.observations, before)
        bids = random_actions(env, rng)
        np.testing.assert_array_equal(env.step(bids)[0], twin.step(bids)[0])
        return
    assert legal, f"bids {actions!r} were accepted with hands {hands.astype(int).tolist()}"
    event("accepted")
    np.testing.assert_array_equal(obs, twin.step(expected)[0])
