"""docs/upgrading.md, generated from the removed-API table (``python -m rlguard_dev.docs --write`` writes it)."""

from __future__ import annotations

from rlguard.engine.target import known_releases
from rlguard.rules.data import CHANGED_DEFAULTS, NEWEST_KNOWN_TORCHRL, REMOVED_API, ApiChange, ChangedDefault

INTRO = """\
# Upgrading TorchRL code

TorchRL breaks its public API often, and most TorchRL code was written against an older release. rlguard
knows every public torchrl and tensordict name, method and keyword removed from the first release (torchrl 0.0.5) to {newest}, the
constructors that only raise, and the enum members that raise with some classes: the table at the end of
this page is generated from the released wheels, not written by hand.

## Upgrade a codebase in five steps

1. **Say which torchrl you move to.** `--target-torchrl {newest_minor}` judges one version. Without it,
   rlguard reads your pin (`pyproject.toml` `[project] dependencies`, then `requirements*.txt`) and judges a
   removal against the **newest version the pin admits**: `torchrl>=0.7` is judged at {newest} (the newest
   known release, which a fresh `pip install` resolves), `torchrl>=0.6,<0.9` at 0.8.1, `torchrl==0.7.2` at
   0.7.2. Each message names the release from which the use breaks. The text report's header and
   `rlguard doctor` show the target and where it came from.
2. **See what breaks.** `rlguard check --target-torchrl {newest_minor} --select RLG006,RLG007 src/` lists each
   import and use of a removed API once. [RLG006](rules/RLG006.md) covers the collector names
   (`SyncDataCollector`, ...), [RLG007](rules/RLG007.md) everything else; both read the same table, so
   selecting RLG006 alone behaves as it always did. Add `preview = true` under
   `[tool.rlguard.rules.RLG007]` to also see names deprecated at the target but not yet removed, with the
   version that removes them.
3. **Review the whole upgrade as one diff.** `rlguard fix --diff --target-torchrl {newest_minor} src/ > upgrade.patch`
   prints every safe fix; `git apply upgrade.patch` applies it.
4. **Apply.** `rlguard fix --target-torchrl {newest_minor} src/` applies the safe fixes (drop-in renames: the
   same class under a new name or in a new module). `--unsafe-fixes` adds the renames whose replacement takes
   other arguments or behaves differently; the finding's message says what to check at each one.
5. **Finish by hand** what has no fix (below), then run your tests on the new torchrl.

## What stays manual

- Names upstream removed without naming a successor (the table's *replacement* is empty): the message says
  so; remove or rewrite the use.
- Removed methods, and keywords removed without a successor (`VmasWrapper.unbatched_action_spec`,
  `default_interaction_mode=`, ...): the message names the replacement where upstream did; the call needs a
  person. A keyword renamed through upstream's own `**kwargs` block (`entropy_coef=` to `entropy_coeff=`,
  `min=` to `low=`) is fixed safely, in the call and as a key of a dict literal the library spreads as that
  class's keywords (`distribution_kwargs={{"min": ...}}` beside `distribution_class=TanhNormal`).
- The exploration wrappers whose constructor only raises (`AdditiveGaussianWrapper`, `EGreedyWrapper`,
  `OrnsteinUhlenbeckProcessWrapper`) get an unsafe rewrite,
  `TensorDictSequential(policy, AdditiveGaussianModule(spec=policy.spec.clone(), ...))`, with `.step()`
  called on the module (`policy[-1].step()`); a call passing anything but the policy and keywords the
  module takes is left to a person.
- `NormalParamWrapper(net, ...)`, whose constructor only raises from torchrl 0.7, gets an unsafe rewrite,
  `Sequential(net, NormalParamExtractor(...))` with the wrapper's other arguments (the old class ran `net`
  first, then did what the extractor does): `torch.nn.Sequential` passes one input and one output between
  its modules, and the state_dict keys of `net` start with `0.` instead of `operator.`.
- A key of torchrl 0.1's spec containers (`specs["input_spec"]["action"]`, `env.output_spec["observation"]`)
  is rewritten safely to where 0.2 on keep it (`["full_action_spec", "action"]`, `["full_observation_spec"]`)
  when it is read; a write is only flagged (the containers are locked: set `env.action_spec` instead).
- An assignment a later release's property setter refuses, `self.<attr> = ...` in a class deriving (through
  the project's own bases) from torchrl's `EnvBase`: `self.device = d` gets an unsafe rewrite to
  `self.to(d)`, as upstream's message says (under `if d is not None:` unless `d` is a string or a
  `torch.device(...)`: the old attribute took None); `self.input_spec = spec` gets an unsafe rewrite to
  `self.state_spec = spec` (0.1's `input_spec` held the action too, under `"action"`: such an entry goes to
  `action_spec`); `self.output_spec = ...` and `TransformedEnv`'s `self.batch_size = ...` are only flagged.
  In `__init__`, `self.device = d` before the constructor stores a device is taken (the setter accepts a
  first value) and not flagged. On an instance (`env.input_spec = spec`, `wrapped.batch_size = ...` of a
  `TransformedEnv`), built by the class or by a project class deriving from it, the setters that take no
  first value are flagged the same way.
- A `_step` returning `TensorDict({{"next": {{...}}}}, ...)` in an `EnvBase` subclass (torchrl 0.1's layout;
  0.2 on, `step` nests the output under `"next"` itself) gets an unsafe rewrite: the literal loses its
  `"next"` level and the method's reads of `out["next"]` become `out`; a method that reads what it returns
  otherwise is only flagged.
- `TanhNormal`'s `min=`/`max=` are flagged from torchrl 0.6, whose constructor took them through `**kwargs`
  and dropped them without a word (the default bounds were used); 0.7 raises.
- `ExplorationType.MODE` in a file that uses `TanhNormal` gets an unsafe fix to `DETERMINISTIC` (torchrl
  0.6 on raises: TanhNormal has no analytical mode).
- Unsafe entries: the fix renames, and the message (the table's *note*) says what else to change, such as
  `dtype=torch.int64` for `UnboundedDiscreteTensorSpec`.
- A default that changed keeps its old value only in code written before the change: `ParallelEnv(...)` gets
  `daemon=True` (its workers were daemonic up to torchrl 0.10; from 0.11 an env never closed keeps the
  interpreter from exiting), and `loss = DiscreteSACLoss(...)` is followed by
  `loss.set_keys(action_value="state_value")` (torchrl 0.1 read the Q-values there; 0.2 on read
  "action_value"). Both fixes are unsafe. When a file was written is read from its stale references: one that
  fails from a release no later than the change's (here `torchrl.envs.vec_env`, gone from 0.2) shows the file
  ran only before it. A file with none, a shim that covers both sides, or a pin whose lowest release is the
  change's or later is left alone: modern code means the new default.
- A value head of an `ActorValueOperator` (`get_value_head()`) given to a value estimator (`GAE`, `TD0Estimator`,
  `TD1Estimator`, `TDLambdaEstimator`, `VTrace`, `make_value_estimator`) raises from torchrl 0.2, which runs
  the network on the next step's keys: they never hold the common module's output (0.1 kept the root's keys
  in the next step). Flagged where the estimator gets it, through names, project functions that return it and
  project functions that hand it on; the unsafe fix calls `get_value_operator()` where the file takes the
  head. In a file written for 0.1 (dated as above), every head of an operator is fixed so, since 0.1's code
  gave heads to estimators freely. The operator holds the common module's parameters: an optimizer also given
  the actor's lists them twice, which torch warns about.
- `module.set_recurrent_mode(True)` is [RLG002](rules/RLG002.md)'s: both of its fixes are unsafe and leave a
  comment that says what to check (a bare statement did nothing before 0.8 and is removed; a used value becomes
  the module itself); neither wraps calls in `with set_recurrent_mode(True):`, which raises on single steps.

## How the table is made

`python -m rlguard_dev.upgrade_table` (its write option updates `rlguard/rules/removed_api.json`) downloads the
newest patch of every minor release of torchrl and tensordict on the package index, from the first (torchrl 0.0
and 0.1 have wheels for Python 3.10 at most: those are read), with pip, without dependencies,
into the git-ignored `tests/fixtures/wheels/`, and
reads their sources with `ast`, importing nothing. A public name (a class, function or re-export of a module
whose path has no `_` part) present in one release and absent from the next and every later one is removed in
that next release. Its replacement comes from upstream's evidence, and the *how* column says which:
`message` (the deprecation warning or docstring names it), `subclass` (a deprecated shim subclassing one
class), `alias` (`Old = New`), `moved` (the same name is still defined in another public module), `review`
(set by hand, below). A rename is safe when the old name was the new class under another name (a shim that
adds nothing, an alias, a move); otherwise unsafe. Methods are listed only where their last release warned
about them; constructor keywords where a release read them out of `**kwargs` into a parameter while warning
(renamed: a safe fix), or where no later constructor takes them and none takes `**kwargs` (no fix); see
*found* below and `rlguard_dev/upgrade_changes.py`. tensordict's versions follow torchrl's minor (torchrl 0.N requires tensordict 0.N),
so a tensordict entry is judged against the target torchrl's minor.

`tests/rules/test_removed_api_table.py` fails when the shipped table differs from what the script derives
from the wheels (it skips, saying so, when the wheels are not downloaded), and
`tests/rules/test_removed_api_execution.py` proves every fixable entry: a snippet in the old API fails on
{newest}, `rlguard fix` rewrites it, and the fixed snippet imports and constructs what it uses.
`tests/rules/test_removed_api_releases.py` asks the releases themselves, by importing them (torchrl before
0.2 with a stand-in for its compiled extension, which does not load against the tested torch): every entry
must fail on {newest} the way its kind says (the import fails; building a class whose constructor only
raises raises from its own body; the keyword is refused; the enum member's attribute raises), and work on
the release before its removal. Keywords are listed under the public module users import their class
from in both releases.

The hand review (`REMOVED_API_REVIEW` in `rlguard/rules/data.py`, each with its reason) dropped the
`deprecated` entries for `Collector`, `EnvBase` and `LossModule` (their warnings are about constructor
arguments, not the classes), named successors upstream's messages did not (`set_exploration_type`,
`exploration_type`, `set_interaction_type`), and added what to check for `UnboundedDiscreteTensorSpec`,
`Recorder` and `LogReward`.

## The table

Releases read: torchrl {releases}. *deprecated* is the first release that warned; *removed* the first release
without the name; names with no *removed* are deprecated at {newest} and flagged only with `preview`.
*found* says how the entry was found: `removal` (the name left every later release), `deprecation` (a
warning or docstring), `kwargs-block` (the constructor read the old keyword out of `**kwargs` into a
parameter while warning), `signature` (a constructor keyword no later constructor takes, none of them
taking `**kwargs`), `raises` (the constructor only raises), `raises-attribute` (a distribution attribute
only raises, so the enum member that reads it does), `spec-layout` (an `EnvBase` spec property whose getter
returned `self.<container>["<key>"]` reads another key of that container once `EnvBase` reads the old one no
more; the old entry's new keys follow from the property's setters), `raising-setter` (a property whose
setter refuses every value in the newest release, its last statement a `raise` and no test before it
reading the value, where an earlier release let it be set: a setter that stored it, or a plain attribute;
the replacement is the method the message says to call, or for a spec container the property that reads
its one key no moved entry went to), `step-output` (`EnvBase.step` read `_step`'s output under `"next"`
up to a release and takes it whole from the next one). A keyword's *removed* says when a call
raises; an earlier release that took it through a `**kwargs` it never read is named in the note (it dropped
the value without a word). *Defaults that changed* (`rlguard_dev/upgrade_defaults.py`) are found
`hard-coded` (a constant of one release, `process.daemon = True`, that the next sets from a new constructor
parameter with another default), `accepted-keys` (a loss's `_AcceptedKeys` field with a literal default that
changed, read by the older release), or `review` (a key the older release hard-coded, written by hand with its
reason and checked against both wheels). A removed module's replacement is the newest module that
offers at least half of its public names; its fix applies where each use of the module takes one of them.
"""


def _version(version: tuple[int, ...] | None) -> str:
    return ".".join(map(str, version)) if version else ""


def _row(change: ApiChange) -> str:
    what = f"`{change.module}.{change.name}`"
    note = change.note.replace("|", "\\|")
    if change.with_classes:
        note = "with " + ", ".join(f"`{c}`" for c in change.with_classes)
    if change.ignored_in:
        note = f"silently ignored from {_version(change.ignored_in)}" + (f"; {note}" if note else "")
    if change.kind == "returns":
        note = "returned at the root, no longer under `[" + "][".join(f'\"{k}\"' for k in change.path) + "]`"
    elif change.path:
        note = "now under `[" + "][".join(f'\"{k}\"' for k in change.path) + "]`"
    if change.rewrite:
        note = f"rewritten {change.rewrite}" + (f"; {note}" if note else "")
    replacement = f"`{change.replacement}`" if change.replacement else ""
    return (f"| {what} | {_version(change.deprecated_in)} | {_version(change.removed_in)} | {replacement} | "
            f"{change.fix} | {change.found or 'review'}; {change.how}{'; ' + note if note else ''} |")


def _by_version() -> list[str]:
    """How many changes each release brings, and how each is fixed."""
    counts: dict[tuple[str, tuple[int, ...]], dict[str, int]] = {}
    for change in REMOVED_API:
        if change.removed_in is not None:
            package = change.module.split(".")[0]
            cell = counts.setdefault((package, change.removed_in), {"safe": 0, "unsafe": 0, "none": 0})
            cell[change.fix] += 1
    rows = [f"| {package} {_version(version)} | {c['safe']} | {c['unsafe']} | {c['none']} |"
            for (package, version), c in sorted(counts.items(), key=lambda item: (item[0][1], item[0][0]))]
    return ["### By version\n", "| removed in | fixed safely | fixed unsafely | by hand |", "| --- | --- | --- | --- |",
            *rows, ""]


def upgrading_page() -> str:
    newest = _version(NEWEST_KNOWN_TORCHRL)
    lines = [INTRO.format(newest=newest, newest_minor=_version(NEWEST_KNOWN_TORCHRL[:2]),
                          releases=", ".join(_version(v) for v in known_releases())), *_by_version()]
    sections = (("Removed names", "name", True), ("Deprecated names (flagged with `preview`)", "name", False),
                ("Removed methods", "method", True), ("Removed keywords", "keyword", True),
                ("Deprecated keywords (flagged with `preview`)", "keyword", False),
                ("Enum members that raise", "member", True),
                ("Moved keys of the environment's spec containers", "key", True), ("Removed modules", "module", True),
                ("Parameters made keyword-only", "positional", True),
                ("Assignments a property's setter refuses", "setter", True),
                ("Method outputs that moved", "returns", True))
    for title, kind, removed in sections:
        rows = sorted((c for c in REMOVED_API if c.kind == kind and (c.removed_in is not None) == removed),
                      key=lambda c: (c.module, c.name))
        lines += [f"### {title}\n", "| API | deprecated | removed | replacement | fix | found; how; note |",
                  "| --- | --- | --- | --- | --- | --- |", *map(_row, rows), ""]
    lines += ["### Defaults that changed\n", "| API | before | from | value from then on | fix | found; note |",
              "| --- | --- | --- | --- | --- | --- |",
              *map(_default_row, sorted(CHANGED_DEFAULTS, key=lambda d: (d.module, d.cls, d.name))), ""]
    return "\n".join(lines).rstrip() + "\n"


def _default_row(change: ChangedDefault) -> str:
    what = f"`{change.module}.{change.cls}({change.name}=)`" if change.kind == "parameter" else \
        f"`{change.module}.{change.cls}` key `{change.name}`"
    note = change.note.replace("|", "\\|")
    return (f"| {what} | `{change.old}` | {_version(change.changed_in)} | `{change.new}` | unsafe | "
            f"{change.found}{'; ' + note if note else ''} |")
