"""Data tables the rules read: TorchRL names, versions and types.

Kept as data in one place, so a new TorchRL release means editing a table, not a visitor.
Qualified names are the public import paths users write.

Which library classes are transforms, replay buffers, trainers, recurrent modules or TensorDicts is
not listed here: the API model answers it (``engine/apimodel.json`` and its small extract
``engine/apimodel_classes.json``, generated from the installed libraries' class hierarchy by
``python -m rlguard_dev.apimodel --write``), read on first use. The tables left are behaviour no
class hierarchy states (who copies or pickles what, since which version), each with where it was read.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlguard.engine.apimodel import KIND_PACKAGES, class_names, model

# The default target lives in the engine; rules and tests read it here too.
from rlguard.engine.target import NEWEST_KNOWN_TORCHRL as NEWEST_KNOWN_TORCHRL
from rlguard.engine.tensordicts import is_tensordict_class as is_tensordict_class
from rlguard.engine.target import REMOVED_API_FILE as REMOVED_API_FILE, removed_api_table

# Collector renames (0.11), with the old names removed in 0.13.
COLLECTOR_RENAMES: dict[str, str] = {
    "SyncDataCollector": "Collector",
    "aSyncDataCollector": "AsyncCollector",
    "MultiSyncDataCollector": "MultiSyncCollector",
    "MultiaSyncDataCollector": "MultiAsyncCollector",
    "DataCollectorBase": "BaseCollector",
    "_MultiDataCollector": "MultiCollector",
    "DistributedDataCollector": "DistributedCollector",
    "DistributedSyncDataCollector": "DistributedSyncCollector",
    "RPCDataCollector": "RPCCollector",
}
COLLECTOR_NAMES_REMOVED_IN = (0, 13)
COLLECTOR_MODULES = ("torchrl.collectors", "torchrl.collectors.collectors", "torchrl.collectors.distributed")
# Where each old name could be imported from (torchrl 0.11-0.12, public re-exports and the module
# defining it). torchrl 0.14.1 has the new name in each of these modules (tests/rules/test_rlg006_execution.py).
_COLLECTORS_PUBLIC = ("torchrl.collectors", "torchrl.collectors.collectors")
COLLECTOR_OLD_NAME_MODULES: dict[str, tuple[str, ...]] = {
    "SyncDataCollector": (*_COLLECTORS_PUBLIC, "torchrl.collectors._single"),
    "aSyncDataCollector": (*_COLLECTORS_PUBLIC, "torchrl.collectors._single_async"),
    "MultiSyncDataCollector": (*_COLLECTORS_PUBLIC, "torchrl.collectors._multi_sync"),
    "MultiaSyncDataCollector": (*_COLLECTORS_PUBLIC, "torchrl.collectors._multi_async"),
    "DataCollectorBase": (*_COLLECTORS_PUBLIC, "torchrl.collectors._base"),
    "_MultiDataCollector": _COLLECTORS_PUBLIC,
    "DistributedDataCollector": ("torchrl.collectors.distributed", "torchrl.collectors.distributed.generic"),
    "DistributedSyncDataCollector": ("torchrl.collectors.distributed", "torchrl.collectors.distributed.sync"),
    "RPCDataCollector": ("torchrl.collectors.distributed", "torchrl.collectors.distributed.rpc"),
}

# Collectors that run the policy in the calling process: they deep-copy it only to move it to
# ``policy_device``/``device`` (read from torchrl 0.14.1's collectors, with the pre-0.11 names).
SINGLE_PROCESS_COLLECTORS = frozenset({"Collector", "SyncDataCollector"})
# Collectors that send the policy to other processes (pickled, whatever the device), read from torchrl
# 0.14.1's sources with the pre-0.11 names. AsyncCollector (aSyncDataCollector) is a MultiAsyncCollector
# with one worker process: it pickles the policy too.
MULTI_PROCESS_COLLECTORS = frozenset(
    {
        "AsyncCollector", "aSyncDataCollector", "RayCollector",
        "MultiSyncCollector", "MultiSyncDataCollector", "MultiAsyncCollector", "MultiaSyncDataCollector",
        "MultiCollector", "_MultiDataCollector", "DistributedCollector", "DistributedDataCollector",
        "DistributedSyncCollector", "DistributedSyncDataCollector", "RPCCollector", "RPCDataCollector",
    }
)
# Not listed: AsyncBatchedCollector serves a ``policy=`` from a thread of the calling process
# (only ``policy_factory=`` reaches an inference process), so it neither copies nor pickles it.

# Losses whose constructor deep-copies the networks it is given (torchrl >= 0.5; read from 0.5-0.14.1 sources).
# Before 0.5, convert_to_functional copied in every loss constructor.
DEEPCOPYING_LOSSES = frozenset({"DDPGLoss", "DiscreteCQLLoss", "QMixerLoss"})
ALL_LOSSES_COPY_BEFORE = (0, 5)
LOSS_MODULES = ("torchrl.objectives",)
# The networks each torchrl loss takes, in positional order (torchrl 0.14.1 signatures): which
# argument ``loss.get_stateful_net("<name>")`` copies when the loss was built positionally.
LOSS_NETWORK_PARAMETERS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("DQNLoss", "DistributionalDQNLoss", "DiscreteCQLLoss"), ("value_network",)),
    **dict.fromkeys(("A2CLoss", "PPOLoss", "ClipPPOLoss", "KLPENPPOLoss", "IPPOLoss", "MAPPOLoss", "ReinforceLoss"),
                    ("actor_network", "critic_network")),
    **dict.fromkeys(("CQLLoss", "CrossQLoss", "DiscreteSACLoss", "REDQLoss", "TD3Loss", "TD3BCLoss", "TQCLoss"),
                    ("actor_network", "qvalue_network")),
    **dict.fromkeys(("SACLoss", "IQLLoss", "DiscreteIQLLoss"), ("actor_network", "qvalue_network", "value_network")),
    **dict.fromkeys(("BCLoss", "ACTLoss", "DTLoss", "OnlineDTLoss", "DiffusionBCLoss", "GRPOLoss", "CISPOLoss"),
                    ("actor_network",)),
    "DDPGLoss": ("actor_network", "value_network"),
    "QMixerLoss": ("local_value_network", "mixer_network"),
    "RNDLoss": ("predictor_network", "target_network"),
    "GAILLoss": ("discriminator_network",),
}

# Modules that hold the policy they wrap: an uncopyable inner module makes them uncopyable (constructors
# read from tensordict/torchrl 0.14.1; RLG001 knows the keyword each takes its modules by).
POLICY_WRAPPERS = frozenset(
    {
        "tensordict.nn.TensorDictModule", "tensordict.nn.TensorDictSequential", "tensordict.nn.Seq",
        "tensordict.nn.ProbabilisticTensorDictModule", "tensordict.nn.ProbabilisticTensorDictSequential",
        "tensordict.nn.TensorDictModuleWrapper", "tensordict.nn.WrapModule", "tensordict.nn.Mod",
        "torchrl.modules.TensorDictModule", "torchrl.modules.TensorDictSequential",
        "torchrl.modules.SafeModule", "torchrl.modules.SafeSequential", "torchrl.modules.SafeProbabilisticModule",
        "torchrl.modules.SafeProbabilisticTensorDictSequential", "torchrl.modules.ProbabilisticActor",
        "torchrl.modules.Actor", "torchrl.modules.ValueOperator", "torchrl.modules.QValueActor",
        "torchrl.modules.DistributionalQValueActor", "torchrl.modules.ActorCriticWrapper",
        "torchrl.modules.ActorValueOperator", "torchrl.modules.ActorCriticOperator",
        "torchrl.modules.EGreedyModule", "torchrl.modules.AdditiveGaussianModule",
        "torchrl.modules.OrnsteinUhlenbeckProcessModule", "torchrl.modules.tensordict_module.Actor",
        "torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict",
    }
)

# Which values cannot be deep-copied or pickled is generated by trying (``rlguard/engine/uncopyable.json``,
# ``python -m rlguard_dev.uncopyable --write``); RLG001 asks ``rlguard.engine.uncopyable``.
# torch.multiprocessing re-exports multiprocessing; users write either.
UNCOPYABLE_ALIASES = {"torch.multiprocessing.": "multiprocessing."}

# Methods that make a class copyable by its own rules.
COPY_HOOKS = frozenset({"__deepcopy__", "__getstate__", "__reduce__", "__reduce_ex__"})
UNCOPYABLE_MARKERS = frozenset({"rlguard.runtime.uncopyable", "rlguard.runtime.marker.uncopyable"})

# The context manager's import paths (torchrl 0.7-0.14.1) and rlguard's backport.
RECURRENT_CONTEXT_MANAGERS = frozenset(
    {
        "torchrl.modules.set_recurrent_mode", "torchrl.modules.tensordict_module.set_recurrent_mode",
        "torchrl.modules.tensordict_module.rnn.set_recurrent_mode",
        # rlguard's runtime re-exports torchrl's (a backport before 0.7).
        "rlguard.runtime.set_recurrent_mode", "rlguard.runtime.recurrent.set_recurrent_mode",
    }
)
RECURRENT_METHOD_RAISES_FROM = (0, 8)
# The context manager exists, and the method is deprecated, from torchrl 0.7 (pytorch/rl#2584).
RECURRENT_CONTEXT_MANAGER_SINCE = (0, 7)
# Module methods that return the module itself: ``LSTMModule(...).to(device)`` is still an LSTMModule
# (torch.nn.Module; the API model cannot tell for ``to``: only its overloads carry a return annotation).
MODULE_METHODS_RETURNING_SELF = frozenset(
    {"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "eval", "requires_grad_", "share_memory"}
)
# Module methods whose result does not depend on the recurrent mode (weights, device, train/eval): behaviour
# of torch.nn.Module that torchrl's recurrent modules do not override (torchrl 0.14.1).
MODE_INDEPENDENT_MODULE_METHODS = frozenset(
    {
        "parameters", "named_parameters", "buffers", "named_buffers", "state_dict", "load_state_dict",
        "modules", "named_modules", "children", "named_children", "zero_grad", "to", "cuda", "cpu",
        "train", "eval", "requires_grad_",
    }
)
# Names whose classes never carry set_recurrent_mode unless they are recurrent modules (is_recurrent_module).
LIBRARY_PREFIXES = ("torch.", "torchrl.", "tensordict.")


# ----- library classes, from the API model -----
def _library_class(qualname: str, kind: str) -> bool:
    """A class of ``kind`` imported from its package (``KIND_PACKAGES``) or any module under it, by its
    name: users import from public and private modules alike. A class of that name elsewhere is not one."""
    module, _, name = qualname.rpartition(".")
    return (module + ".").startswith(KIND_PACKAGES[kind] + ".") and name in class_names()[kind]


def is_recurrent_module(qualname: str) -> bool:
    """torchrl's LSTMModule or GRUModule (or a torchrl subclass), whose set_recurrent_mode() method was
    deprecated in 0.7, then removed (0.8)."""
    return _library_class(qualname, "recurrent")


def recurrent_module_names() -> frozenset[str]:
    return class_names()["recurrent"]


def is_torchrl_loss(qualname: str) -> bool:
    """A loss class from torchrl.objectives (``DQNLoss``, ``ClipPPOLoss``, ...), any submodule."""
    module, _, name = qualname.rpartition(".")
    return name.endswith("Loss") and (module + ".").startswith(tuple(m + "." for m in LOSS_MODULES))

# Trainer hook destinations accepted by Trainer.register_op (torchrl's sources: the original ones, and those 0.14 added).
TRAINER_HOOKS_ORIGINAL = (
    "batch_process", "pre_optim_steps", "process_optim_batch", "post_loss", "optimizer",
    "post_steps", "post_optim", "pre_steps_log", "post_steps_log", "post_optim_log",
)
TRAINER_HOOKS_BY_VERSION: tuple[tuple[tuple[int, ...], tuple[str, ...]], ...] = (
    (
        (0, 14),
        TRAINER_HOOKS_ORIGINAL
        + (
            "pre_epoch", "post_epoch", "pre_epoch_log", "post_epoch_log", "process_loss",
            "post_optim_complete_log", "setup", "shutdown",
        ),
    ),
    ((0, 0), TRAINER_HOOKS_ORIGINAL),
)
# The hook base class's import paths (torchrl 0.14.1); RLG005 reads hooks' MRO up to it.
TRAINER_HOOK_BASES = frozenset({"torchrl.trainers.TrainerHookBase", "torchrl.trainers.trainers.TrainerHookBase"})
TRAINER_HOOK_METHODS = ("state_dict", "load_state_dict", "register")
# Methods torchrl calls with the TensorDicts a transform works on, and how many of their first
# parameters after ``self`` are such TensorDicts (torchrl 0.14.1 Transform; ``_reset`` gets the input
# and the reset TensorDict, ``_step`` the root and the "next" one). ``_reset_env_preprocess`` is left
# out: it may receive None.
TRANSFORM_TENSORDICT_METHODS: dict[str, int] = {
    "_call": 1, "forward": 1, "_inv_call": 1, "inv": 1, "transform_fake_tensordict": 1,
    "_reset": 2, "_reset_on_native_autoreset": 2, "_step": 2, "_post_step_mdp_hooks": 2,
}


def is_tensordict_type(qualname: str) -> bool:
    """A TensorDict class of tensordict (``TensorDictBase``, ``TensorDict``, ``LazyStackedTensorDict``, ...)."""
    return qualname.startswith("tensordict.") and model().class_kind(qualname) == "tensordict"


def is_torchrl_trainer(qualname: str) -> bool:
    """torchrl's Trainer or one of the Trainer subclasses it ships (``PPOTrainer``, ...)."""
    return _library_class(qualname, "trainer")


def is_replay_buffer(qualname: str) -> bool:
    """A torchrl replay buffer, or a dataset built on one: both accept ``transform=``."""
    return _library_class(qualname, "replay_buffer")


def trainer_hooks_for(target: tuple[int, ...]) -> tuple[str, ...]:
    for since, hooks in TRAINER_HOOKS_BY_VERSION:
        if target >= since:
            return hooks
    return TRAINER_HOOKS_ORIGINAL


def is_torchrl_transform(qualname: str) -> bool:
    """A transform class from torchrl.envs or torchrl.envs.transforms (any submodule)."""
    return _library_class(qualname, "transform")


def torchrl_transform_names() -> frozenset[str]:
    """The names of torchrl's transform classes (``Transform``, ``StepCounter``, ``Compose``, ...)."""
    return class_names()["transform"]


# JSON encoders: (module, functions that serialise, keyword that makes tensors safe).
JSON_MODULES = ("json", "orjson", "ujson", "simplejson")
JSON_DUMP_FUNCTIONS = frozenset({"dump", "dumps"})
# Each encoder's signature, checked against json (stdlib), simplejson 4.3, ujson 6.1 and orjson 3.13:
# qualified name -> (leading positional parameters: the payload, then ``fp`` for dump; positional
# indexes at which ``default``/``cls`` may be passed). None of them encodes a tensor by itself.
JSON_ENCODERS: dict[str, tuple[int, tuple[int, ...]]] = {
    "json.dumps": (1, ()),  # obj, *, ..., cls, ..., default
    "json.dump": (2, ()),  # obj, fp, *, ...
    "simplejson.dumps": (1, (5, 9)),  # obj, skipkeys, ensure_ascii, check_circular, allow_nan, cls, ..., default
    "simplejson.dump": (2, (6, 10)),
    "ujson.dumps": (1, (8,)),  # obj, ensure_ascii, ..., reject_bytes, default, separators
    "ujson.dump": (2, ()),  # obj, fp, **kwargs
    "orjson.dumps": (1, (1,)),  # obj, /, default, option
}
# Keywords that give the encoder a way to encode other types (tensors included).
JSON_ENCODER_KEYWORDS = ("default", "cls")


# ----- the removed-API table (RLG006, RLG007) -----
# removed_api.json is generated from the real wheels by ``python -m rlguard_dev.upgrade_table --write``
# (tests/rules/test_removed_api_table.py keeps it in step). Versions are torchrl's; a tensordict
# entry's versions are tensordict's, which share torchrl's minor (torchrl 0.N requires tensordict 0.N).
@dataclass(frozen=True)
class ApiChange:
    """One removed or deprecated public name, method, keyword or enum member."""

    kind: str  # "name", "method", "keyword", "member" (an enum member that raises with some classes), "key",
    # "module", or "positional" (a parameter that became keyword-only)
    module: str  # where users imported the name from; for methods and keywords, the defining module
    name: str  # the name; ``Class.member`` for methods and keywords
    deprecated_in: tuple[int, ...] | None
    removed_in: tuple[int, ...] | None  # None: deprecated, still there in the newest release
    announced_removal: tuple[int, ...] | None  # the removal upstream's message announced
    replacement: str | None  # qualified where known (``torchrl.data.Composite``)
    how: str  # how the replacement was found: message, subclass, alias, moved, review, none
    fix: str  # "safe" (drop-in rename), "unsafe" (arguments or behaviour differ), "none"
    note: str = ""  # what to change by hand, from the review
    found: str = ""  # how the entry was found: removal, deprecation, kwargs-block, signature, raises, ...
    # A wrapper replaced by a module after the policy ("policy-then-module"), or after the module it wrapped
    # in a ``torch.nn.Sequential`` ("operator-then-module"), with the keywords each took.
    rewrite: str = ""
    old_parameters: tuple[str, ...] = ()
    new_parameters: tuple[str, ...] = ()
    with_classes: tuple[str, ...] = ()  # a member: the classes it raises with
    aliases: tuple[str, ...] = ()  # a member: the names its enum is imported as
    # A keyword that releases before ``removed_in`` took through a ``**kwargs`` they never read: from
    # this release the call runs and the value is dropped (torchrl 0.6's ``TanhNormal(min=...)``).
    ignored_in: tuple[int, ...] | None = None
    # A key of an environment spec container (``name``: ``EnvBase.<container>.<key>``): the keys that now
    # lead to what the old key held, in order.
    path: tuple[str, ...] = ()
    provides: tuple[str, ...] = ()  # a module: its public names that its replacement module offers
    position: int = -1  # a parameter made keyword-only: how many positional parameters precede it
    # A setter that refuses every value but a first one, before the constructor stores one
    # (``EnvBase.device``: ``if self._device is None: <store>; return``).
    once: bool = False

    @property
    def breaks_in(self) -> tuple[int, ...] | None:
        """The first release where a use goes wrong: dropped without a word, or gone."""
        return self.ignored_in or self.removed_in

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"

    @property
    def new_name(self) -> str | None:
        return self.replacement.rpartition(".")[2] if self.replacement else None

    @property
    def new_module(self) -> str | None:
        return self.replacement.rpartition(".")[0] or None if self.replacement else None


def _version(text: str | None) -> tuple[int, ...] | None:
    return tuple(int(p) for p in text.split(".")) if text else None


# Hand review of the generated table (once, for 0.4 -> 0.14.1). Keyed by (module, name); None drops
# a generated entry, a dict changes fields. Each says why.
_DEPRECATION_NOT_ABOUT_THE_NAME = None  # the warning found is about an argument, not the class itself
# torchrl 0.9's LogReward logged the batch's ("next", "reward") mean as "r_training"; LogScalar names the
# value after its key and logs its std too (torchrl 0.10-0.14 trainers.py, LogScalar.__call__).
_LOG_REWARD = ("what is logged changes: LogScalar logs the key `(\"next\", \"reward\")` under the name "
               "\"('next', 'reward')\" instead of \"r_training\", and adds a std value beside the mean; "
               "`LogScalar(key=(\"next\", \"reward\"), logname=\"r_training\", include_std=False)` logs what "
               "LogReward logged")
REMOVED_API_REVIEW: dict[tuple[str, str], dict | None] = {
    # Collector, EnvBase and LossModule warn about deprecated constructor arguments, not themselves.
    ("torchrl.collectors", "Collector"): _DEPRECATION_NOT_ABOUT_THE_NAME,
    ("torchrl.collectors.collectors", "Collector"): _DEPRECATION_NOT_ABOUT_THE_NAME,
    ("torchrl.envs", "EnvBase"): _DEPRECATION_NOT_ABOUT_THE_NAME,
    ("torchrl.envs.common", "EnvBase"): _DEPRECATION_NOT_ABOUT_THE_NAME,
    ("torchrl.objectives", "LossModule"): _DEPRECATION_NOT_ABOUT_THE_NAME,
    ("torchrl.objectives.common", "LossModule"): _DEPRECATION_NOT_ABOUT_THE_NAME,
    # UnboundedDiscreteTensorSpec defaulted to dtype int64; Unbounded defaults to float32 (continuous).
    ("torchrl.data", "UnboundedDiscreteTensorSpec"): {
        "note": "pass `dtype=torch.int64` (the old class's default) to keep a discrete spec"},
    ("torchrl.data.tensor_specs", "UnboundedDiscreteTensorSpec"): {
        "note": "pass `dtype=torch.int64` (the old class's default) to keep a discrete spec"},
    ("torchrl.modules.tensordict_module.exploration", "OrnsteinUhlenbeckProcessWrapper.forward"):
        _DEPRECATION_NOT_ABOUT_THE_NAME,  # the class still exists (deprecated); its forward moved to a base
    # The generator read "when" from "use ... when": tensordict's own successor is set_interaction_type.
    ("tensordict.nn", "set_interaction_mode"): {
        "replacement": "tensordict.nn.set_interaction_type", "how": "review", "fix": "unsafe",
        "note": "it takes an `InteractionType` (`InteractionType.MODE`, `.RANDOM`, ...) rather than a string"},
    # Upstream's warning named no successor; torchrl's own code moved to set_exploration_type.
    ("torchrl.envs", "set_exploration_mode"): {
        "replacement": "torchrl.envs.set_exploration_type", "how": "review", "fix": "unsafe",
        "note": "it takes an `ExplorationType` (`ExplorationType.RANDOM`, `.DETERMINISTIC`, ...)"},
    ("torchrl.envs.utils", "set_exploration_mode"): {
        "replacement": "torchrl.envs.utils.set_exploration_type", "how": "review", "fix": "unsafe",
        "note": "it takes an `ExplorationType` (`ExplorationType.RANDOM`, `.DETERMINISTIC`, ...)"},
    ("torchrl.envs", "exploration_mode"): {
        "replacement": "torchrl.envs.exploration_type", "how": "review", "fix": "unsafe",
        "note": "it returns an `ExplorationType`, not a string"},
    ("torchrl.envs.utils", "exploration_mode"): {
        "replacement": "torchrl.envs.utils.exploration_type", "how": "review", "fix": "unsafe",
        "note": "it returns an `ExplorationType`, not a string"},
    # Recorder and LogReward took other arguments than their successors.
    ("torchrl.trainers", "Recorder"): {"note": "LogValidationReward takes `environment=`, `record_interval=` "
                                               "and `policy_exploration=` as Recorder did; check the rest"},
    ("torchrl.trainers.trainers", "Recorder"): {"note": "LogValidationReward takes `environment=`, "
                                                        "`record_interval=` and `policy_exploration=` as Recorder "
                                                        "did; check the rest"},
    ("torchrl.trainers", "LogReward"): {"note": _LOG_REWARD},
    ("torchrl.trainers.trainers", "LogReward"): {"note": _LOG_REWARD},
}


def _load_removed_api() -> tuple[ApiChange, ...]:
    changes = []
    for entry in removed_api_table()["entries"]:
        review = REMOVED_API_REVIEW.get((entry["module"], entry["name"]), {})
        if review is None:
            continue
        entry = {**entry, **review}
        changes.append(ApiChange(
            entry["kind"], entry["module"], entry["name"], _version(entry["deprecated_in"]),
            _version(entry["removed_in"]), _version(entry["announced_removal"]), entry["replacement"],
            entry["how"], entry["fix"], entry.get("note", ""), entry.get("found", ""), entry.get("rewrite", ""),
            tuple(entry.get("old_parameters", ())), tuple(entry.get("new_parameters", ())),
            tuple(entry.get("with", ())), tuple(entry.get("aliases", ())), _version(entry.get("ignored_in")),
            tuple(entry.get("path", ())), tuple(entry.get("provides", ())), entry.get("position", -1),
            entry.get("once", False)))
    # Collector names in the modules that defined them (private, so the generator skips them): RLG006
    # covered them before the table existed.
    for old, modules in COLLECTOR_OLD_NAME_MODULES.items():
        for module in modules:
            if not any(c.kind == "name" and c.module == module and c.name == old for c in changes):
                changes.append(ApiChange("name", module, old, (0, 11), COLLECTOR_NAMES_REMOVED_IN, None,
                                         f"{module}.{COLLECTOR_RENAMES[old]}", "review", "safe"))
    return tuple(changes)


REMOVED_API = _load_removed_api()
# Constructor arguments whose dict the class spreads as keywords into another argument's class
# (``distribution_kwargs`` into ``distribution_class``): (class argument, kwargs argument) pairs.
FORWARDED_KEYWORDS: frozenset[tuple[str, str]] = frozenset(
    (f["class_argument"], f["kwargs_argument"]) for f in removed_api_table().get("forwards", ()))


@dataclass(frozen=True)
class ChangedDefault:
    """A default that changed between releases (``rlguard_dev/upgrade_defaults.py``): code written for a release
    before ``changed_in`` that relies on it means something else from then on."""

    kind: str  # "parameter": a constructor keyword old code never passed; "tensor-key": a loss's key (``set_keys``)
    module: str  # where users import the class from
    cls: str
    name: str  # the parameter or the ``_AcceptedKeys`` field
    old: str  # the value before ``changed_in``, as Python source
    new: str  # the value from ``changed_in`` on, as Python source
    changed_in: tuple[int, ...]
    found: str  # "hard-coded", "accepted-keys" or "review" (written by hand, with its reason in ``note``)
    note: str


CHANGED_DEFAULTS: tuple[ChangedDefault, ...] = tuple(
    ChangedDefault(d["kind"], d["module"], d["class"], d["name"], d["old"], d["new"], _version(d["changed_in"]) or (0,),
                   d["found"], d["note"]) for d in removed_api_table().get("defaults", ()))
# Attributes through which the library's classes hold an instance of a class with removed members
# (``space`` holds a ContinuousBox): class -> attribute names.
MEMBER_HOLDERS: dict[str, tuple[str, ...]] = {
    owner: tuple(attributes) for owner, attributes in removed_api_table().get("holders", {}).items()}
