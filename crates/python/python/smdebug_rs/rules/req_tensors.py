"""``smdebug.rules.req_tensors``: the tensors a rule declares it needs at a step
(``self.req_tensors`` of a :class:`~smdebug_rs.rules.rule.Rule`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterable, KeysView, List, Optional, Sequence, ValuesView

from smdebug_rs.exceptions import TensorUnavailable

if TYPE_CHECKING:
    from smdebug_rs._native import Tensor
    from smdebug_rs.trials.trial import Trial

__all__ = ["RequiredTensors", "RequiredTensorsForTrial"]


class RequiredTensorsForTrial:
    """The tensors (and their steps) a rule needs from one trial at the current step."""

    def __init__(self, trial: Trial) -> None:
        self.trial = trial
        self._tensor_steps: Dict[str, List[int]] = {}
        self._tensors: Dict[str, Tensor] = {}

    def _add_steps_for_tensor(self, name: str, steps: Iterable[int]) -> None:
        self._tensor_steps.setdefault(name, []).extend(steps)
        if name not in self._tensors:
            self._tensors[name] = self.trial.tensor(name)

    def add(self, name: str, steps: Iterable[int], should_match_regex: bool = False) -> None:
        """Requires ``name`` (every name the regex matches with ``should_match_regex``)."""
        if should_match_regex:
            for n in self.trial.tensor_names(regex=[name]):
                self._add_steps_for_tensor(n, steps)
        else:
            if not self.trial.has_tensor(name):
                raise TensorUnavailable(name)
            self._add_steps_for_tensor(name, steps)

    def get_tensor_steps(self, name: str) -> List[int]:
        """The steps required of ``name``."""
        return self._tensor_steps[name]

    def get_names(self) -> KeysView[str]:
        """The required names."""
        return self._tensor_steps.keys()

    def get(self) -> ValuesView[Tensor]:
        """The required tensors."""
        return self._tensors.values()

    def clear(self) -> None:
        """Forgets every requirement."""
        self._tensor_steps.clear()
        self._tensors.clear()

    def fetch(self) -> None:
        """Waits for the required steps, then reads every required value."""
        steps = sorted({s for ss in self._tensor_steps.values() for s in ss})
        self.trial.wait_for_steps(steps)
        for name, ss in self._tensor_steps.items():
            t = self._tensors[name]
            for s in ss:
                t.value(s)


class RequiredTensors:
    """``self.req_tensors`` of a rule: required tensors per trial (base trial by default)."""

    def __init__(self, base_trial: Trial, other_trials: Optional[Sequence[Trial]]) -> None:
        self.base_trial = base_trial
        self._per_trial = {base_trial: RequiredTensorsForTrial(base_trial)}
        for t in other_trials or []:
            self._per_trial[t] = RequiredTensorsForTrial(t)

    def _of(self, trial: Optional[Trial]) -> RequiredTensorsForTrial:
        return self._per_trial[self.base_trial if trial is None else trial]

    def add(self, name: str, steps: Iterable[int], trial: Optional[Trial] = None,
            should_match_regex: bool = False) -> None:
        """Requires ``name`` at ``steps`` from ``trial`` (default: the base trial)."""
        self._of(trial).add(name, steps, should_match_regex=should_match_regex)

    def get_tensor_steps(self, name: str, trial: Optional[Trial] = None) -> List[int]:
        """The steps required of ``name``."""
        return self._of(trial).get_tensor_steps(name)

    def get_names(self, trial: Optional[Trial] = None) -> KeysView[str]:
        """The required names."""
        return self._of(trial).get_names()

    def get(self, trial: Optional[Trial] = None) -> ValuesView[Tensor]:
        """The required tensors."""
        return self._of(trial).get()

    def clear(self) -> None:
        """Forgets every requirement."""
        for r in self._per_trial.values():
            r.clear()

    def fetch(self) -> None:
        """Waits for and reads every required value."""
        for r in self._per_trial.values():
            r.fetch()
