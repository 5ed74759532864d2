"""The learner's network: MLP encoder, LSTM core, one actor head per action dimension, a critic.

Two paths share every weight: ``forward_step`` (one decision for many rows, used while playing) and
``forward_sequence`` (segments of many steps, used by PPO). Both zero the LSTM state at episode
starts, the sequence path also in mid-segment, so training replays exactly what the rollout computed.

A policy file holds ``policy_spec`` (the constructor arguments, plain types) and ``policy`` (a state
dict); trainer checkpoints and league snapshots both have these keys, and ``load_policy`` reads either.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from arena.atomic import verify_sha256

LstmState = tuple[Tensor, Tensor]
Logits = list[Tensor] | Tensor

ACTOR_GAIN = 0.01
CRITIC_GAIN = 1.0
MASKED_LOGIT = -1e9  # an illegal action's logit: softmax gives it probability 0 (no NaN in the entropy)
ENCODER_GAIN = math.sqrt(2.0)
LSTM_GAIN = 1.0
_M = TypeVar("_M", bound=nn.Module)
_PAD_LOGIT = -1e9  # logit of the padding entries when heads of different sizes are stacked


class MultiDiscreteHeads(nn.Module):
    """Sampling, log-probabilities and entropy over the heads of a MultiDiscrete action space.

    Works on the heads' logits concatenated along the last axis (``[..., sum(nvec)]``). Heads of
    unequal size are padded to the largest with a very negative logit (zero probability), so every
    head is handled by one batched op instead of a Python loop over heads.
    """

    def __init__(self, nvec: Sequence[int]) -> None:
        super().__init__()
        self.nvec = [int(n) for n in nvec]
        self.dims, self.width = len(self.nvec), max(self.nvec)
        self.padded = any(n != self.width for n in self.nvec)
        total = sum(self.nvec)
        spread = torch.zeros(total, self.dims * self.width)
        pad_bias = torch.full((self.dims * self.width,), _PAD_LOGIT)
        offset = 0
        for d, n in enumerate(self.nvec):
            for k in range(n):
                spread[offset + k, d * self.width + k] = 1.0
                pad_bias[d * self.width + k] = 0.0
            offset += n
        self.register_buffer("spread", spread, persistent=False)
        self.register_buffer("pad_bias", pad_bias, persistent=False)
        self.register_buffer("value_index", torch.arange(self.width), persistent=False)

    def log_softmax(self, flat: Tensor) -> Tensor:
        """Per-head log-probabilities, ``[..., dims, width]``."""
        lead = flat.shape[:-1]
        if self.padded:  # exact: the 0/1 spread matrix only moves values
            flat = torch.addmm(self.pad_bias, flat.reshape(-1, flat.shape[-1]), self.spread)
        return torch.log_softmax(flat.reshape(*lead, self.dims, self.width), dim=-1)

    def sample(
        self, flat: Tensor, generator: torch.Generator | None = None, noise: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Draws one action per row by inverse CDF: ``(actions int64 [n, dims], log_prob [n])``.
        ``noise``: the uniform numbers to use (``[n, dims]`` in [0, 1)) instead of drawing them."""
        logp = self.log_softmax(flat)
        probs = logp.exp()
        cdf = probs.cumsum(dim=-1)
        if noise is None:
            u = torch.rand(cdf.shape[:-1] + (1,), generator=generator, device=flat.device, dtype=cdf.dtype)
        else:
            if noise.shape != cdf.shape[:-1]:
                raise ValueError(f"sampling noise of shape {tuple(noise.shape)}: these logits need "
                                 f"{tuple(cdf.shape[:-1])} (rows, action dims)")
            u = noise.to(cdf.dtype).unsqueeze(-1)
        # Rounding can carry u past the last action with a probability > 0: clamped to that one (a
        # padded value or an illegal one, whose logits are masked, has none).
        last = torch.where(probs > 0, self.value_index, 0).amax(dim=-1)
        actions = torch.minimum((cdf < u).sum(dim=-1), last)
        return actions, logp.gather(-1, actions.unsqueeze(-1)).squeeze(-1).sum(-1)

    def log_prob(self, flat: Tensor, actions: Tensor) -> Tensor:
        logp = self.log_softmax(flat)
        return logp.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1).sum(-1)

    def entropy(self, flat: Tensor) -> Tensor:
        logp = self.log_softmax(flat)
        return -(logp.exp() * logp).sum(dim=(-2, -1))

    def log_prob_and_entropy(self, flat: Tensor, actions: Tensor) -> tuple[Tensor, Tensor]:
        logp = self.log_softmax(flat)
        chosen = logp.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1).sum(-1)
        return chosen, -(logp.exp() * logp).sum(dim=(-2, -1))


def _build(module: type[_M], *args: Any, **kwargs: Any) -> _M:
    """``module(*args, **kwargs)``: the counterpart of ``nn.utils.skip_init`` that initialises."""
    return module(*args, **kwargs)


class Policy(nn.Module):
    """MLP encoder -> LSTM cell -> actor heads (one per action dimension) and a critic.

    The actor heads are stored fused as one ``Linear`` whose row blocks are the heads; each block
    is initialised orthogonally on its own with gain 0.01, the critic with gain 1.0. Initialisation
    runs after every submodule exists, so no constructor (the LSTM's included) overwrites it.
    """

    def __init__(
        self,
        obs_dim: int,
        action_nvec: Sequence[int],
        hidden_size: int = 128,
        lstm_size: int = 128,
        encoder_layers: int = 1,
        action_prior: Sequence[Sequence[float]] | None = None,
        action_mask: Sequence[int] | None = None,
        value_heads: int = 1,
        team_critic: bool = False,
        *,
        init_weights: bool = True,
    ) -> None:
        """``init_weights=False`` leaves the weights uninitialised, for a caller that loads a state dict
        next (``policy_from_payload``): drawing them costs ~40% of loading a snapshot, for nothing."""
        super().__init__()
        if obs_dim < 1 or hidden_size < 1 or lstm_size < 1 or encoder_layers < 1 or value_heads < 1:
            raise ValueError(
                f"obs_dim, hidden_size, lstm_size, encoder_layers and value_heads must be >= 1, got "
                f"{obs_dim}, {hidden_size}, {lstm_size}, {encoder_layers}, {value_heads}"
            )
        if len(action_nvec) < 1 or any(int(n) < 1 for n in action_nvec):
            raise ValueError(f"action_nvec must be a non-empty list of sizes >= 1, got {list(action_nvec)}")
        self.obs_dim = int(obs_dim)
        self.action_nvec = [int(n) for n in action_nvec]
        self.action_mask = _check_mask(action_mask, self.obs_dim, sum(self.action_nvec))
        self.hidden_size, self.lstm_size, self.encoder_layers = hidden_size, lstm_size, encoder_layers
        self.value_heads = int(value_heads)
        build = _build if init_weights else nn.utils.skip_init
        layers: list[nn.Module] = []
        width = self.obs_dim
        for _ in range(encoder_layers):
            layers += [build(nn.Linear, width, hidden_size), nn.ReLU()]
            width = hidden_size
        self.encoder = nn.Sequential(*layers)
        self.lstm = build(nn.LSTMCell, hidden_size, lstm_size)
        self.actor = build(nn.Linear, lstm_size, sum(self.action_nvec))
        self.critic = build(nn.Linear, lstm_size, self.value_heads)  # a value per opponent class (_value)
        self.heads = MultiDiscreteHeads(self.action_nvec)
        if init_weights:
            self._init_weights()  # last: after nn.LSTMCell's own reset_parameters
        # The team critic (MAPPO's centralised value, from the fighters' own features): a second linear
        # map, of the mean LSTM output of the row's living teammates (``team_context``). Built after
        # every other weight is initialised, so a policy with it starts from the same weights as one
        # without; zero at first, so it starts from the same values too.
        self.team_critic: nn.Linear | None = None
        if team_critic:
            self.team_critic = build(nn.Linear, lstm_size, self.value_heads, bias=False)
            if init_weights:
                nn.init.zeros_(self.team_critic.weight)
        if action_prior is not None:
            self.set_action_prior(action_prior)

    def _init_weights(self) -> None:
        with torch.no_grad():
            for layer in self.encoder:
                if isinstance(layer, nn.Linear):
                    nn.init.orthogonal_(layer.weight, ENCODER_GAIN)
                    nn.init.zeros_(layer.bias)
            nn.init.orthogonal_(self.lstm.weight_ih, LSTM_GAIN)
            nn.init.orthogonal_(self.lstm.weight_hh, LSTM_GAIN)
            nn.init.zeros_(self.lstm.bias_ih)
            nn.init.zeros_(self.lstm.bias_hh)
            for block in self.actor_head_weights():
                nn.init.orthogonal_(block, ACTOR_GAIN)
            nn.init.zeros_(self.actor.bias)
            nn.init.orthogonal_(self.critic.weight, CRITIC_GAIN)
            nn.init.zeros_(self.critic.bias)

    def set_action_prior(self, probs: Sequence[Sequence[float]]) -> None:
        """Sets the actor's biases so that a fresh policy (near-zero head weights) acts with these
        per-head probabilities, e.g. a rare fire action. Only the initial distribution changes: the
        biases are learnt like any weight, and the prior is not part of ``spec``."""
        if len(probs) != len(self.action_nvec) or any(
            len(p) != n for p, n in zip(probs, self.action_nvec, strict=False)
        ):
            raise ValueError(f"action_prior needs one list of probabilities per head with sizes "
                             f"{self.action_nvec}, got {[len(p) for p in probs]}")
        for p in probs:
            positive = all(math.isfinite(float(x)) and float(x) > 0.0 for x in p)
            if not positive or abs(sum(map(float, p)) - 1) > 1e-3:
                raise ValueError(f"action_prior {list(p)} must be positive probabilities summing to 1")
        with torch.no_grad():
            for bias, p in zip(self.actor.bias.split(self.action_nvec), probs, strict=True):
                logp = torch.tensor([math.log(float(x)) for x in p], dtype=bias.dtype)
                bias.copy_(logp - logp.mean())

    # ------------------------------------------------------------------ description

    @property
    def spec(self) -> dict[str, Any]:
        """Constructor arguments as plain types: ``Policy(**spec)`` rebuilds this architecture."""
        spec: dict[str, Any] = {
            "obs_dim": self.obs_dim,
            "action_nvec": list(self.action_nvec),
            "hidden_size": self.hidden_size,
            "lstm_size": self.lstm_size,
            "encoder_layers": self.encoder_layers,
            "action_mask": None if self.action_mask is None else list(self.action_mask),
            "value_heads": self.value_heads,
        }
        if self.team_critic is not None:  # only then: files written before it existed keep their spec
            spec["team_critic"] = True
        return spec

    def actor_head_weights(self) -> list[Tensor]:
        """The weight block of each action dimension's head (views into the fused actor)."""
        return list(self.actor.weight.split(self.action_nvec, dim=0))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def initial_state(self, n: int, device: torch.device | str | None = None) -> LstmState:
        device = device if device is not None else self.actor.weight.device
        return (torch.zeros(n, self.lstm_size, device=device), torch.zeros(n, self.lstm_size, device=device))

    # ------------------------------------------------------------------ forward paths

    def forward_step(
        self, obs: Tensor, state: LstmState, episode_start: Tensor, value_class: Tensor | None = None,
        team: Tensor | None = None,
    ) -> tuple[list[Tensor], Tensor, LstmState]:
        """One decision for ``n`` rows: ``(logits per head [n, k_d], value [n], new state)``.

        ``state`` is each row's state after its previous step; rows with ``episode_start`` begin
        from a zero state. ``value_class`` (int64 [n]) picks each row's value head (see ``_value``).
        ``team`` (int64 [n]): rows with equal labels are teammates, for a team critic (``_value``);
        every row of a team must be among the ``n``. The actor never reads it.
        """
        keep = (~episode_start.bool()).unsqueeze(-1).to(obs.dtype)
        h, c = self._lstm_step(self.encoder(obs), (state[0] * keep, state[1] * keep))
        value = self._value(h, value_class, self._team_context(h, obs, team))
        return self._split(self.mask_logits(self.actor(h), obs)), value, (h, c)

    def forward_sequence(
        self, obs: Tensor, state: LstmState, episode_starts: Tensor, value_class: Tensor | None = None,
        team: Tensor | None = None,
    ) -> tuple[list[Tensor], Tensor]:
        """Segments of ``T`` steps for ``n`` rows: ``(logits per head [n, T, k_d], values [n, T])``.

        ``state`` is the state at each segment's start; it is zeroed wherever ``episode_starts``
        is set, mid-segment included, exactly as ``forward_step`` does step by step.
        ``value_class`` (int64 [n, T]) picks each step's value head (see ``_value``). ``team`` (int64
        [n]): segments with equal labels are teammates' over the same steps (``forward_step``).
        """
        n, steps = obs.shape[0], obs.shape[1]
        x = self.encoder(obs.reshape(n * steps, -1)).view(n, steps, -1)
        keep = (~episode_starts.bool()).unsqueeze(-1).to(obs.dtype)
        if torch.compiler.is_compiling():  # no data-dependent branches in a compiled graph
            any_start = [True] * steps
        else:  # one sync, then mask only where needed (multiplying by 1 would change nothing)
            any_start = episode_starts.any(dim=0).tolist()
        h, c = state
        outs = []
        for t, (x_t, keep_t) in enumerate(zip(x.unbind(1), keep.unbind(1), strict=True)):
            if any_start[t]:
                h, c = h * keep_t, c * keep_t
            h, c = self._lstm_step(x_t, (h, c))
            outs.append(h)
        hs = torch.stack(outs, dim=1)
        context = self._team_context(hs, obs, team)
        hs = hs.reshape(n * steps, -1)
        logits = self.mask_logits(self.actor(hs).view(n, steps, -1), obs)
        classes = None if value_class is None else value_class.reshape(n * steps)
        context = None if context is None else context.reshape(n * steps, -1)
        return self._split(logits), self._value(hs, classes, context).view(n, steps)

    def _team_context(self, h: Tensor, obs: Tensor, team: Tensor | None) -> Tensor | None:
        """For a team critic, each row's mean LSTM output over its living teammates (itself left out):
        ``h`` ``[n, ..., lstm_size]``, ``team`` ``[n]`` labels. No gradient flows back through it: the
        shared encoder and LSTM learn from each fighter's own actor and critic losses as without a
        team critic (MAPPO keeps the critic's network apart from the actor's for the same reason).
        A teammate shot down (no decision: ``has_decision``) counts for nothing, as the actor's loss
        leaves out its rows; a row with no living teammate (a one-fighter team, the last one alive)
        gets zeros. None without a team critic or labels."""
        if self.team_critic is None or team is None:
            return None
        h = h.detach()  # read, not shaped: the team's values never pull on a teammate's features
        alive = self.has_decision(obs).to(h.dtype).unsqueeze(-1)
        weighted = h * alive
        labels, index = torch.unique(team, return_inverse=True)
        sums = torch.zeros((labels.numel(), *h.shape[1:]), dtype=h.dtype, device=h.device)
        counts = torch.zeros((sums.shape[0], *alive.shape[1:]), dtype=h.dtype, device=h.device)
        sums = sums.index_add(0, index, weighted)
        counts = counts.index_add(0, index, alive)
        others = (counts.index_select(0, index) - alive).clamp_min(1.0)
        return (sums.index_select(0, index) - weighted) / others

    def _value(self, h: Tensor, value_class: Tensor | None, team_context: Tensor | None = None) -> Tensor:
        """The critic's value of LSTM outputs ``h`` ``[m, lstm_size]``: head ``value_class[i]`` for row
        ``i``, head 0 for every row without ``value_class``.

        A policy trained against a mix of opponents (a league) can keep one value head per class of
        opponent (``PolicyConfig.critic_per_opponent``): the trainer knows whom each match is
        against, the actor does not, so the critic's baseline no longer averages a match it is
        likely to lose with one it is likely to win. Only the actor acts; the heads are for training.

        A team critic (``PolicyConfig.team_critic``) adds a map of ``team_context`` (``_team_context``):
        the value of a fighter's row then reads its living teammates' features as well as its own.
        Without teammates the context is zero and the value is the fighter's own critic's, exactly."""
        values = self.critic(h)
        if team_context is not None and self.team_critic is not None:
            values = values + self.team_critic(team_context)
        if value_class is None or self.value_heads == 1:
            return values[..., 0]
        return values.gather(-1, value_class.unsqueeze(-1)).squeeze(-1)

    def mask_logits(self, flat: Tensor, obs: Tensor) -> Tensor:
        """The heads' logits (``[..., sum(action_nvec)]``) with every illegal action's set to
        ``MASKED_LOGIT`` (probability 0), where the game has a legal-action mask: the observation
        columns ``action_mask = (start, stop)``, 1 for a legal value. Without one: unchanged."""
        return masked_logits(flat, obs, self.action_mask)

    def has_decision(self, obs: Tensor) -> Tensor:
        """Bool per row: False only on a row with no legal action (a shot-down fighter's zeroed
        observation); the trainer leaves such rows out of the policy's loss (``PPOTrainer._update``)."""
        return has_decision(obs, self.action_mask)

    def _lstm_step(self, x: Tensor, state: LstmState) -> LstmState:
        """One LSTM step. With autograd off it runs a fused form of the same function: one GEMM with
        the bias folded in, one sigmoid over all gates and tanh(g) = 2 sigmoid(2g) - 1 (the g rows of
        the fused weight are doubled), 2-3x faster on CPU than ``nn.LSTMCell``, equal to ~1e-6."""
        if torch.is_grad_enabled() or torch.compiler.is_compiling():  # the compiler fuses on its own
            return self.lstm(x, state)
        h, c = state
        gates = torch.mm(lstm_input(x, h), self.fused_lstm_weight())
        return lstm_cell_from_gates(gates, c)

    def fused_lstm_weight(self) -> Tensor:
        """``[x, h, 1] @ W`` gives the gate pre-activations (g doubled); cached until the weights change.
        For inference only (no gradient flows through the cache)."""
        params = (self.lstm.weight_ih, self.lstm.weight_hh, self.lstm.bias_ih, self.lstm.bias_hh)
        key = tuple((p.data_ptr(), p._version) for p in params)
        if getattr(self, "_fused_key", None) != key:
            self._fused_weight = fuse_lstm_weights(self.lstm)
            self._fused_key = key
        return self._fused_weight

    def encoder_linears(self) -> list[nn.Linear]:
        """The encoder's linear layers in order (each followed by a ReLU)."""
        return [layer for layer in self.encoder if isinstance(layer, nn.Linear)]

    def value_step(
        self, obs: Tensor, state: LstmState, episode_start: Tensor, value_class: Tensor | None = None,
        team: Tensor | None = None,
    ) -> Tensor:
        """The critic's value of one observation per row (e.g. a final observation to bootstrap)."""
        return self.forward_step(obs, state, episode_start, value_class, team)[1]

    # ------------------------------------------------------------------ action distribution

    def sample_actions(
        self, logits: Logits, generator: torch.Generator | None = None, noise: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """``(actions int64 [n, dims], log_prob [n])`` drawn from the heads' categoricals (with
        ``noise``, uniform numbers ``[n, dims]``, instead of drawing from ``generator``)."""
        return self.heads.sample(self._flat(logits), generator, noise)

    def log_prob(self, logits: Logits, actions: Tensor) -> Tensor:
        """Log-probability of ``actions`` (summed over the action dimensions)."""
        return self.heads.log_prob(self._flat(logits), actions)

    def entropy(self, logits: Logits) -> Tensor:
        """Entropy of the joint action distribution (summed over the independent heads)."""
        return self.heads.entropy(self._flat(logits))

    def log_prob_and_entropy(self, logits: Logits, actions: Tensor) -> tuple[Tensor, Tensor]:
        return self.heads.log_prob_and_entropy(self._flat(logits), actions)

    def _split(self, flat: Tensor) -> list[Tensor]:
        return list(flat.split(self.action_nvec, dim=-1))

    @staticmethod
    def _flat(logits: Logits) -> Tensor:
        if isinstance(logits, Tensor):
            return logits
        return logits[0] if len(logits) == 1 else torch.cat(list(logits), dim=-1)


def masked_logits(flat: Tensor, obs: Tensor, action_mask: tuple[int, int] | None) -> Tensor:
    """``flat`` with ``MASKED_LOGIT`` wherever the observation columns ``action_mask`` are 0 (an
    illegal action); unchanged without a mask. ``Policy`` and the grouped bank both mask with it.

    A row whose flags are all 0 carries no mask: that is a zeroed observation (a fighter shot down
    in a team match, whose row the batch still steps and the game ignores), not a state where
    nothing is legal, and masking every value would leave only the heads' padding to sample."""
    if action_mask is None:
        return flat
    start, stop = action_mask
    illegal = obs[..., start:stop] < 0.5
    return flat.masked_fill(illegal & has_decision(obs, action_mask).unsqueeze(-1), MASKED_LOGIT)


def has_decision(obs: Tensor, action_mask: tuple[int, int] | None) -> Tensor:
    """Bool ``obs.shape[:-1]``: whether each row has a decision to make. Every row does, except a row
    whose legal-action flags are all 0: a zeroed observation (a fighter shot down in a team match),
    whose action the game ignores. Without a mask every row decides."""
    if action_mask is None:
        return torch.ones(obs.shape[:-1], dtype=torch.bool, device=obs.device)
    start, stop = action_mask
    return (obs[..., start:stop] >= 0.5).any(dim=-1)


def _check_mask(mask: Sequence[int] | None, obs_dim: int, logits: int) -> tuple[int, int] | None:
    if mask is None:
        return None
    ok = len(mask) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in mask)
    if not ok or not (0 <= mask[0] and mask[1] <= obs_dim and mask[1] - mask[0] == logits):
        raise ValueError(f"action_mask must be the observation columns (start, stop) of one flag per action "
                         f"value: {logits} columns within [0, {obs_dim}], got {mask!r}")
    return int(mask[0]), int(mask[1])


def fuse_lstm_weights(lstm: nn.LSTMCell) -> Tensor:
    """``W`` [input + hidden + 1, 4 hidden] with ``[x, h, 1] @ W`` = the gate pre-activations, the
    g rows doubled (``lstm_cell_from_gates`` computes tanh(g) as 2 sigmoid(2g) - 1)."""
    params = (lstm.weight_ih, lstm.weight_hh, lstm.bias_ih, lstm.bias_hh)
    w_ih, w_hh, b_ih, b_hh = (p.detach() for p in params)
    hidden = lstm.hidden_size
    scale = torch.ones(4 * hidden, 1, dtype=w_ih.dtype, device=w_ih.device)
    scale[2 * hidden : 3 * hidden] = 2.0
    return (torch.cat([w_ih, w_hh, (b_ih + b_hh).unsqueeze(1)], dim=1) * scale).t().contiguous()


def lstm_input(x: Tensor, h: Tensor) -> Tensor:
    """``[x, h, 1]``: the input of the fused LSTM gate product (``Policy.fused_lstm_weight``)."""
    ones = torch.ones(x.shape[0], 1, dtype=x.dtype, device=x.device)
    return torch.cat([x, h, ones], dim=1)


def lstm_cell_from_gates(gates: Tensor, c: Tensor) -> LstmState:
    """The new ``(h, c)`` from the fused gate pre-activations (g doubled; ``gates`` is overwritten)."""
    i, f, g, o = gates.sigmoid_().chunk(4, dim=1)
    c = torch.addcmul(f * c, i, g.mul_(2.0).sub_(1.0))
    return o * torch.tanh(c), c


def policy_from_payload(payload: dict[str, Any], source: str = "<payload>") -> Policy:
    """Rebuilds a policy from a dict holding ``policy_spec`` and ``policy`` (a state dict)."""
    if not isinstance(payload, dict) or "policy_spec" not in payload or "policy" not in payload:
        keys = sorted(payload) if isinstance(payload, dict) else type(payload).__name__
        raise ValueError(
            f"{source} is not a policy file: expected keys 'policy_spec' and 'policy', got {keys}"
        )
    try:
        policy = Policy(**payload["policy_spec"], init_weights=False)
        policy.load_state_dict(payload["policy"])  # strict: every weight is set
    except (TypeError, RuntimeError) as exc:
        raise ValueError(f"{source} holds a policy that does not load: {exc}") from exc
    return policy


def read_torch_file(
    path: str | os.PathLike[str], map_location: str | torch.device, *, what: str, error: type[Exception],
    advice: str = "",
) -> Any:
    """``torch.load(..., weights_only=True)`` of a file the user chose: ``FileNotFoundError`` when it
    is missing, ``error`` when it is damaged, both naming ``what`` and the path (then ``advice``)."""
    path = os.fspath(path)
    tail = f"; {advice}" if advice else ""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{what} not found: {path}{tail}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises many types for a damaged file
        raise error(f"{what} {path} is corrupted or not a torch file: {exc}{tail}") from exc


def load_policy(path: str | os.PathLike[str], device: str | torch.device = "cpu", *,
                sha256: str | None = None) -> Policy:
    """A frozen policy (eval mode, no gradients) from a checkpoint or snapshot file.

    Raises ``FileNotFoundError`` or ``ValueError`` naming the path when it is missing or unreadable;
    with ``sha256`` (a league snapshot's recorded hash), ``ValueError`` naming both hashes when the
    file's bytes are not the ones recorded, before anything is read from it.
    """
    path = os.fspath(path)
    if sha256 is not None and os.path.isfile(path):
        verify_sha256(path, sha256, what="policy file")
    payload = read_torch_file(path, device, what="policy file", error=ValueError)
    policy = policy_from_payload(payload, source=f"policy file {path}").to(device)
    policy.eval()
    policy.requires_grad_(False)
    return policy
