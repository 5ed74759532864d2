"""Trainer and policy configs: defaults are valid, bad values fail with the field's name."""

from __future__ import annotations

import pytest

from arena.trainer.config import PolicyConfig, TrainerConfig, config_from_dict


def test_the_defaults_are_valid() -> None:
    TrainerConfig().validate()
    PolicyConfig().validate()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("num_envs", 0, "num_envs=0 is out of range"),
        ("bptt_horizon", 2.5, "bptt_horizon=2.5"),
        ("gamma", 1.5, "gamma=1.5 is out of range"),
        ("learning_rate", 0.0, "learning_rate=0.0"),
        ("device", "tpu", "device='tpu'"),
        ("rollout_steps", 100, "rollout_steps=100 must be a multiple of bptt_horizon=64"),
        ("minibatch_size", 1000, "minibatch_size=1000 must be a multiple"),
        ("overlap", "yes", "overlap='yes' is not allowed: use true, false or 'auto'"),
        ("torch_threads", 0, "torch_threads=0"),
        ("lr_anneal_power", 0.0, "lr_anneal_power=0.0 is out of range"),
    ],
)
def test_a_bad_value_fails_naming_the_field(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TrainerConfig(**{field: value}).validate()


def test_policy_sizes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="lstm_size=0"):
        PolicyConfig(lstm_size=0).validate()


def test_an_unknown_key_in_a_stored_config_is_named_with_the_valid_keys() -> None:
    expected = r"unknown TrainerConfig keys \['bptt'\]; valid keys: .*bptt_horizon"
    with pytest.raises(ValueError, match=expected):
        config_from_dict(TrainerConfig, {"bptt": 8})
