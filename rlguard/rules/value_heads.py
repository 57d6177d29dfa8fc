"""A value head of an ``ActorValueOperator`` given to a value estimator (RLG007).

``ActorValueOperator(common, policy_head, value_head)``: ``get_value_head()`` is the value head alone, whose
in_keys are the common module's outputs. A value estimator (``GAE``, ``TD0Estimator``, ``TD1Estimator``,
``TDLambdaEstimator``, ``VTrace``, all taking ``value_network=``) runs its network on a step and on the next
step. Up to torchrl 0.1 it ran the next step on ``step_mdp(td)``, which kept the root's other keys
(``keep_other=True``), so the head read the current step's common features for the next value. From 0.2
(``_call_value_nets``) it selects the network's in_keys from the root and from ``"next"`` and stacks them:
``"next"`` never holds the common module's output, and the estimator raises ("The sets of keys in the
tensordicts to stack are exclusive"). ``get_value_operator()`` (the common module, then the head) computes
the features on both. That fails on every release from 0.2 whatever the file's age: a plain finding, at
the estimator (or the project call handing the head on), where the head is taken here or by a project
function the value comes from (``ProjectIndex.value_origin``); fixed only where this file takes it.

Where a head goes from a project function that returns it is not followed (its callers are other files). In
a file written for torchrl 0.1 (dated by a stale reference, as ``changed_defaults`` dates it), every head of
an operator is reported and fixed: 0.1's estimators ran heads, so its code gave them to estimators freely.

A head given elsewhere (a loss's ``critic``, called on data the common module already wrote) runs, and is not
judged; nor is an ``ActorCriticOperator``, whose ``get_value_operator()`` raises and whose head is a Q-value.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlguard.engine.lazy import cst

from rlguard.engine.findings import Breaks, Edit, Fix, Requirement
from rlguard.engine.index import Built, ProjectIndex
from rlguard.engine.reach import argument_slots
from rlguard.rules.data import MODULE_METHODS_RETURNING_SELF

ESTIMATORS = frozenset({"GAE", "TD0Estimator", "TD1Estimator", "TDLambdaEstimator", "VTrace"})
OPERATOR = "ActorValueOperator"
HEAD, WHOLE = "get_value_head", "get_value_operator"
SLOT = "value_network"  # the estimators' keyword (keyword-only) and ``make_value_estimator``'s hyperparameter
BREAKS = Breaks((0, 2), "RuntimeError")
MESSAGE = f"`{HEAD}()` of an `{OPERATOR}` reads the common module's output: from torchrl 0.2 an estimator raises"
REMEDY = (f"pass `{WHOLE}()` (the common module, then the head): from 0.2 an estimator runs its network on the next "
          "step's keys, which never hold the common module's output; torchrl 0.1 ran the next step with the root's "
          "keys (`step_mdp(keep_other=True)`), so the head read the current step's features. The operator also "
          "holds the common module's parameters: an optimizer given both the actor's and its parameters lists them "
          "twice (torch warns)")
ELSEWHERE = "; call it where the head is taken (a project function returns this value)"


@dataclass(frozen=True)
class ValueHead(Requirement):
    """``value`` (the calls that build it) comes out of ``get_value_head()`` of a torchrl ``ActorValueOperator``,
    followed through the project's factories (``ProjectIndex.value_origin``); with ``callee``, its argument
    ``slot`` reaches a value estimator's ``value_network`` (``ProjectIndex.argument_reaches``)."""

    value: Built
    callee: str | None = None
    slot: int | str | None = None


def _estimator_value(callee: str, slot: int | str) -> bool:
    return callee.startswith("torchrl.") and callee.rpartition(".")[2] in ESTIMATORS and slot == SLOT


def holds(requirement: ValueHead, index: ProjectIndex, path: str) -> bool:
    if requirement.callee is not None and requirement.slot is not None \
            and index.argument_reaches(requirement.callee, requirement.slot, _estimator_value, path) is None:
        return False
    origin = index.value_origin(requirement.value, path, MODULE_METHODS_RETURNING_SELF)
    if origin is None or origin[0].callee != "." + HEAD or origin[0].receiver is None:
        return False
    built = index.value_class(origin[0].receiver, origin[1], MODULE_METHODS_RETURNING_SELF)
    return built is not None and built.startswith("torchrl.") and built.rpartition(".")[2] == OPERATOR


def may_be_head(value: Built) -> bool:
    """``value`` may come out of ``get_value_head()``: it does here, or a project function may return it
    (what else a library call returns is no head)."""
    while value.callee.startswith(".") and value.callee[1:] in MODULE_METHODS_RETURNING_SELF \
            and value.receiver is not None:
        value = value.receiver
    if value.callee.startswith("[") and value.receiver is not None:
        value = value.receiver
    return value.callee == "." + HEAD or not value.callee.startswith((".", "torch", "tensordict"))


def sinks(call: cst.Call, callee: str | None) -> list[tuple[cst.BaseExpression, int | str | None]]:
    """The arguments of ``call`` (of ``callee``) a value estimator may run as its network: (value, slot), the
    slot None where ``call`` builds the estimator itself (or is a loss's ``make_value_estimator``); otherwise
    every argument, which reaches an estimator only if the call is of a project callable that hands it on."""
    estimator = callee is not None and callee.startswith("torchrl.") and callee.rpartition(".")[2] in ESTIMATORS
    if estimator or (isinstance(call.func, cst.Attribute) and call.func.attr.value == "make_value_estimator"):
        return [(value, None) for slot, value in argument_slots(call) if slot == SLOT]
    return [(value, slot) for slot, value in argument_slots(call) if slot != "**"]


def head_call(value: cst.BaseExpression, bound: cst.BaseExpression | None) -> cst.Call | None:
    """``x.get_value_head()``: the value itself, or what the plain name it is was last bound to (``bound``)."""
    found = bound if isinstance(value, cst.Name) else value
    return found if isinstance(found, cst.Call) and is_head_call(found) else None


def is_head_call(call: cst.Call) -> bool:
    return not call.args and isinstance(call.func, cst.Attribute) and call.func.attr.value == HEAD


def dated_texts(written_before: str) -> tuple[str, str]:
    """The message and remedy of a head in a file written for torchrl 0.1 (``written_before``: why it was)."""
    return (f"`{HEAD}()` of an `{OPERATOR}` ran in torchrl 0.1's value estimators; from 0.2 an estimator "
            "raises on it", f"{REMEDY}; {written_before}")


def fix(head: cst.Call) -> Fix:
    assert isinstance(head.func, cst.Attribute)
    return Fix("unsafe", f"Call `{WHOLE}()` instead of `{HEAD}()`", (Edit(head.func.attr, cst.Name(WHOLE)),))
