"""``smdebug.rules.req_tensors``: the tensors a rule declares it needs at a step
(``self.req_tensors`` of a :class:`~smdebug_rs.rules.rule.Rule`)."""

from smdebug_rs.exceptions import TensorUnavailable

__all__ = ["RequiredTensors", "RequiredTensorsForTrial"]


class RequiredTensorsForTrial:
    """The tensors (and their steps) a rule needs from one trial at the current step."""

    def __init__(self, trial):
        self.trial = trial
        self._tensor_steps = {}
        self._tensors = {}

    def _add_steps_for_tensor(self, name, steps):
        self._tensor_steps.setdefault(name, []).extend(steps)
        if name not in self._tensors:
            self._tensors[name] = self.trial.tensor(name)

    def add(self, name, steps, should_match_regex=False):
        """Requires ``name`` (every name the regex matches with ``should_match_regex``)."""
        if should_match_regex:
            for n in self.trial.tensor_names(regex=[name]):
                self._add_steps_for_tensor(n, steps)
        else:
            if not self.trial.has_tensor(name):
                raise TensorUnavailable(name)
            self._add_steps_for_tensor(name, steps)

    def get_tensor_steps(self, name):
        """The steps required of ``name``."""
        return self._tensor_steps[name]

    def get_names(self):
        """The required names."""
        return self._tensor_steps.keys()

    def get(self):
        """The required tensors."""
        return self._tensors.values()

    def clear(self):
        """Forgets every requirement."""
        self._tensor_steps.clear()
        self._tensors.clear()

    def fetch(self):
        """Waits for the required steps, then reads every required value."""
        steps = sorted({s for ss in self._tensor_steps.values() for s in ss})
        self.trial.wait_for_steps(steps)
        for name, ss in self._tensor_steps.items():
            t = self._tensors[name]
            for s in ss:
                t.value(s)


class RequiredTensors:
    """``self.req_tensors`` of a rule: required tensors per trial (base trial by default)."""

    def __init__(self, base_trial, other_trials):
        self.base_trial = base_trial
        self._per_trial = {base_trial: RequiredTensorsForTrial(base_trial)}
        for t in other_trials or []:
            self._per_trial[t] = RequiredTensorsForTrial(t)

    def _of(self, trial):
        return self._per_trial[self.base_trial if trial is None else trial]

    def add(self, name, steps, trial=None, should_match_regex=False):
        """Requires ``name`` at ``steps`` from ``trial`` (default: the base trial)."""
        self._of(trial).add(name, steps, should_match_regex=should_match_regex)

    def get_tensor_steps(self, name, trial=None):
        """The steps required of ``name``."""
        return self._of(trial).get_tensor_steps(name)

    def get_names(self, trial=None):
        """The required names."""
        return self._of(trial).get_names()

    def get(self, trial=None):
        """The required tensors."""
        return self._of(trial).get()

    def clear(self):
        """Forgets every requirement."""
        for r in self._per_trial.values():
            r.clear()

    def fetch(self):
        """Waits for and reads every required value."""
        for r in self._per_trial.values():
            r.fetch()
